#include "hdf5/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
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

bool writes_through(const fs::path& target) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(target, ec);
    return !ec && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_symlink(st) && !fs::is_directory(st);
}

std::string copy_into(const fs::path& from, const fs::path& target) {
    const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) return "cannot read '" + from.string() + "': " + std::strerror(errno);
    const int out = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    std::string why = out < 0 ? std::string("cannot open it: ") + std::strerror(errno) : std::string();
    char buf[1 << 16];
    while (why.empty()) {
        const ssize_t n = ::read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) why = std::string("read failed: ") + std::strerror(errno);
        if (n <= 0) break;
        for (ssize_t done = 0; why.empty() && done < n;) {
            const ssize_t w = ::write(out, buf + done, static_cast<std::size_t>(n - done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) why = std::string("write failed: ") + std::strerror(w < 0 ? errno : ENOSPC);
            else done += w;
        }
    }
    if (out >= 0 && ::close(out) != 0 && why.empty()) why = std::string("close failed: ") + std::strerror(errno);
    ::close(in);
    ::unlink(from.c_str());
    return why;
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

// The temporary files being written now, for a handler of SIGINT, SIGTERM and SIGHUP that removes
// them before the process ends as the signal says (Ctrl-C in the middle of a 100 MB case left the
// partial file until the next writer came). Fixed storage: the handler may only read memory and
// call async-signal-safe functions (unlink, signal, raise).
constexpr int kTempSlots = 32;
constexpr std::size_t kTempPathMax = 4096;
char g_temp_path[kTempSlots][kTempPathMax];
volatile sig_atomic_t g_temp_used[kTempSlots];
std::mutex g_temp_mutex;

extern "C" void remove_temp_files_and_end(int sig) {
    bool removed = false;
    for (int i = 0; i < kTempSlots; ++i)
        if (g_temp_used[i]) removed = ::unlink(g_temp_path[i]) == 0 || removed;
    // Said, so that an interrupted run does not end in a half-written progress line: the files
    // finished before the signal are whole (each was renamed into place complete).
    static const char kRemoved[] = "\ninterrupted: the file being written was removed; those written before are complete\n";
    static const char kNone[] = "\ninterrupted: the files written before are complete\n";
    const ssize_t ignored = removed ? ::write(2, kRemoved, sizeof kRemoved - 1) : ::write(2, kNone, sizeof kNone - 1);
    (void)ignored;
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

// Only where nothing else handles the signal: a program's own handling (the runner's) stays.
void install_signal_cleanup_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
            struct sigaction old {};
            if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
            struct sigaction sa {};
            sa.sa_handler = remove_temp_files_and_end;
            sigemptyset(&sa.sa_mask);
            ::sigaction(sig, &sa, nullptr);
        }
    });
}

int claim_temp_slot(const fs::path& temp) {
    const std::string path = temp.string();
    if (path.size() >= kTempPathMax) return -1;  // not cleaned on a signal; the next writer removes it
    std::lock_guard<std::mutex> lock(g_temp_mutex);
    for (int i = 0; i < kTempSlots; ++i)
        if (!g_temp_used[i]) {
            std::memcpy(g_temp_path[i], path.c_str(), path.size() + 1);
            g_temp_used[i] = 1;  // after the path is complete: the handler never reads half a name
            return i;
        }
    return -1;
}

void release_temp_slot(int slot) {
    if (slot < 0) return;
    std::lock_guard<std::mutex> lock(g_temp_mutex);
    g_temp_used[slot] = 0;
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
    install_signal_cleanup_once();
    slot_ = claim_temp_slot(temp_);
}

AtomicFile::~AtomicFile() {
    if (!committed_) {
        std::error_code ec;
        fs::remove(temp_, ec);
    }
    release_temp_slot(slot_);
}

void AtomicFile::commit(const h5::FileContext& ctx) {
    if (writes_through(target_)) {
        committed_ = true;  // copy_into removes the temporary file, whatever happens
        release_temp_slot(slot_);
        slot_ = -1;
        if (const std::string why = copy_into(temp_, target_); !why.empty()) ctx.fail(h5::Kind::unreadable, "file", why);
        return;
    }
    if (const std::string why = sync_to_disk(temp_); !why.empty())
        ctx.fail(h5::Kind::unreadable, "file", "'" + temp_.string() + "': " + why);
    std::error_code ec;
    fs::rename(temp_, target_, ec);
    if (ec) ctx.fail(h5::Kind::unreadable, "file", "cannot rename '" + temp_.string() + "' over it: " + ec.message());
    committed_ = true;
    release_temp_slot(slot_);  // the name is the target's now: a signal must not remove it
    slot_ = -1;
    const fs::path dir = target_.parent_path().empty() ? fs::path(".") : target_.parent_path();
    if (const std::string why = sync_to_disk(dir); !why.empty())
        ctx.fail(h5::Kind::unreadable, "file", "its folder: " + why);
}

}  // namespace moe::golden
