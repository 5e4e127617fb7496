#include "moe/conformance/text_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "moe/golden/golden_file.hpp"
#include "moe/spec/error.hpp"

namespace moe::conformance {

// The temporary file is `<file>.tmp.<pid>.<n>` (the golden writers' names: a killed run's is
// removed by the next writer into the folder), created with O_EXCL and O_NOFOLLOW so that a link
// planted at that name is never written through, synced, then renamed over the file.
namespace {

// Writes all of `content` to `fd`: 0, or the errno of the write that failed.
int write_all(int fd, const std::string& content) {
    for (std::size_t done = 0; done < content.size();) {
        const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? errno : ENOSPC;
        done += static_cast<std::size_t>(n);
    }
    return 0;
}

}  // namespace

void write_file_atomically(const std::string& file, const std::string& content) {
    namespace fs = std::filesystem;
    if (golden::writes_through(file)) {  // /dev/null, a pipe: written into, never replaced (as root: the device node)
        const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0) throw OutputError("cannot write '" + file + "': " + std::strerror(errno));
        const int e = write_all(fd, content);
        ::close(fd);
        if (e != 0) throw OutputError("cannot write '" + file + "': " + std::strerror(e));
        return;
    }
    const fs::path dir = fs::path(file).parent_path().empty() ? fs::path(".") : fs::path(file).parent_path();
    golden::remove_stale_temp_files(dir);
    const std::string tmp = golden::temp_path_for(file).string();
    int fd = -1;
    auto fail = [&](const std::string& what) {
        if (fd >= 0) ::close(fd);
        ::unlink(tmp.c_str());
        throw OutputError("cannot write '" + file + "': " + what);
    };
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        const int e = errno;
        throw OutputError("cannot write '" + file + "': cannot create '" + tmp + "': " + std::strerror(e));
    }
    if (const int e = write_all(fd, content); e != 0) fail("write to '" + tmp + "' failed: " + std::strerror(e));
    if (::fsync(fd) != 0) fail(std::string("fsync of '") + tmp + "' failed: " + std::strerror(errno));
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) fail(std::string("close of '") + tmp + "' failed: " + std::strerror(errno));
    std::error_code ec;
    fs::rename(tmp, file, ec);
    if (ec) fail("rename from '" + tmp + "' failed: " + ec.message());
    golden::sync_to_disk(dir);  // best effort: the file is whole either way
}

void create_output_folder(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw OutputError("cannot make folder '" + dir + "': " + ec.message());
    if (!std::filesystem::is_directory(dir, ec))
        throw OutputError("cannot make folder '" + dir + "': a file is in the way");
}

}  // namespace moe::conformance
