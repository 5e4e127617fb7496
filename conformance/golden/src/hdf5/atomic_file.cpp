#include "hdf5/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>

#include <cctype>
#include <cerrno>
#include <mutex>
#include <set>

#include <atomic>
#include <string>
#include <system_error>

namespace moe::golden {

namespace fs = std::filesystem;

fs::path temp_path_for(const fs::path& target) {
    static std::atomic<unsigned long> counter{0};
    const std::string suffix = ".tmp." + std::to_string(static_cast<long>(::getpid())) + "." +
                               std::to_string(counter.fetch_add(1));
    return target.parent_path() / (target.filename().string() + suffix);
}

std::string replace_target_problem(const fs::path& target) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(target, ec);
    if (ec || !fs::exists(st) || fs::is_regular_file(st) || fs::is_symlink(st)) return {};
    if (fs::is_directory(st)) return "is a folder";
    return "is a device, FIFO or socket, not a regular file: refusing to replace it";
}

std::string sync_to_disk(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::string("cannot open it to sync: ") + std::strerror(errno);
    const bool ok = ::fsync(fd) == 0 || errno == EINVAL || errno == EROFS;  // a folder on some file systems
    const std::string why = ok ? std::string() : std::string("fsync failed: ") + std::strerror(errno);
    ::close(fd);
    return why;
}

namespace {

// "<name>.tmp.<pid>.<n>": the pid, or -1 when `name` is not such a temporary file.
long temp_file_pid(const std::string& name) {
    const auto last = name.rfind('.');
    if (last == std::string::npos || last + 1 == name.size()) return -1;
    const auto mid = name.rfind('.', last - 1);
    if (mid == std::string::npos || mid < 4 || name.compare(mid - 4, 4, ".tmp") != 0 || mid + 1 == last) return -1;
    for (std::size_t i = mid + 1; i < name.size(); ++i)
        if (i != last && !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
    try {
        return std::stol(name.substr(mid + 1, last - mid - 1));
    } catch (const std::exception&) {
        return -1;
    }
}

bool process_alive(long pid) {
    if (pid <= 0) return true;  // not ours to judge
    if (pid == static_cast<long>(::getpid())) return true;
    return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

void clean_folder_once(const fs::path& dir) {
    static std::mutex mutex;
    static std::set<std::string> cleaned;
    std::lock_guard<std::mutex> lock(mutex);
    if (!cleaned.insert(fs::absolute(dir).lexically_normal().string()).second) return;
    remove_stale_temp_files(dir);
}

}  // namespace

std::vector<std::string> remove_stale_temp_files(const fs::path& dir) {
    std::vector<std::string> removed;
    std::error_code ec;
    for (fs::directory_iterator it(dir.empty() ? fs::path(".") : dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        const long pid = temp_file_pid(name);
        if (pid < 0 || process_alive(pid)) continue;
        std::error_code rm;
        if (it->is_regular_file(rm) && fs::remove(it->path(), rm)) removed.push_back(name);
    }
    return removed;
}

AtomicFile::AtomicFile(fs::path target) : target_(std::move(target)), temp_(temp_path_for(target_)) {
    clean_folder_once(target_.parent_path().empty() ? fs::path(".") : target_.parent_path());
}

AtomicFile::~AtomicFile() {
    if (!committed_) {
        std::error_code ec;
        fs::remove(temp_, ec);
    }
}

void AtomicFile::commit(const h5::FileContext& ctx) {
    if (const std::string why = replace_target_problem(target_); !why.empty()) ctx.fail(h5::Kind::unreadable, "file", why);
    if (const std::string why = sync_to_disk(temp_); !why.empty())
        ctx.fail(h5::Kind::unreadable, "file", "'" + temp_.string() + "': " + why);
    std::error_code ec;
    fs::rename(temp_, target_, ec);
    if (ec) ctx.fail(h5::Kind::unreadable, "file", "cannot rename '" + temp_.string() + "' over it: " + ec.message());
    committed_ = true;
    const fs::path dir = target_.parent_path().empty() ? fs::path(".") : target_.parent_path();
    if (const std::string why = sync_to_disk(dir); !why.empty())
        ctx.fail(h5::Kind::unreadable, "file", "its folder: " + why);
}

}  // namespace moe::golden
