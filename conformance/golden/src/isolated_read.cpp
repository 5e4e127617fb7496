#include "moe/golden/isolated_read.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "moe/golden/case_bytes.hpp"

namespace moe::golden {

namespace {

using bytes::Reader;
using bytes::Writer;

// The case (case_bytes.hpp), then how its file stores it.
void encode(Writer& w, const GoldenCase& c, const FileStorage& s) {
    bytes::write_case(w, c);
    w.u64(s.superblock_version);
    w.u64(s.metadata_checksums);
    w.u64(s.file_bytes);
    w.u64(s.datasets.size());
    for (const auto& d : s.datasets) {
        w.str(d.path);
        w.str(d.layout);
        w.u64(d.shuffle | (d.deflate << 1) | (d.fletcher32 << 2));
        w.u64(d.stored_bytes);
        w.u64(d.memory_bytes);
    }
}

GoldenCase decode(Reader& r, FileStorage* s) {
    GoldenCase c = bytes::read_case(r);
    FileStorage local;
    FileStorage& st = s ? *s : local;
    st.superblock_version = static_cast<unsigned>(r.u64());
    st.metadata_checksums = r.u64() != 0;
    st.file_bytes = r.u64();
    st.datasets.clear();
    for (std::uint64_t n = r.u64(); n > 0; --n) {
        DatasetStorage d;
        d.path = r.str();
        d.layout = r.str();
        const std::uint64_t f = r.u64();
        d.shuffle = f & 1;
        d.deflate = f & 2;
        d.fletcher32 = f & 4;
        d.stored_bytes = r.u64();
        d.memory_bytes = r.u64();
        st.datasets.push_back(std::move(d));
    }
    return c;
}

constexpr const char* kChild = "the reading process";

void write_all(int fd, const unsigned char* bytes, std::size_t size) {
    for (std::size_t done = 0; done < size;) {
        const ssize_t n = ::write(fd, bytes + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) ::_exit(3);
        done += static_cast<std::size_t>(n);
    }
}

// The child: a length-prefixed message (one byte of outcome: 0 case, 1 FileError, 2 other
// error; then its fields), then for a case the element bytes of every tensor, straight from
// memory: neither side ever holds a second copy of the data.
[[noreturn]] void child(int fd, const std::filesystem::path& file, ReadOptions o) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::signal(SIGPIPE, SIG_IGN);
    Writer w;
    GoldenCase c;
    try {
        FileStorage s;
        o.storage = &s;
        c = read_golden(file, o);
        w.out.push_back(0);
        encode(w, c, s);
    } catch (const FileError& e) {
        w.out = {1, static_cast<unsigned char>(e.kind())};
        w.str(e.what());
    } catch (const std::exception& e) {
        w.out = {2};
        w.str(e.what());
    }
    Writer length;
    length.u64(w.out.size());
    write_all(fd, length.out.data(), length.out.size());
    write_all(fd, w.out.data(), w.out.size());
    if (w.out[0] == 0)
        for (const Tensor* t : bytes::case_tensors(c)) write_all(fd, t->data(), t->nbytes());
    ::_exit(0);
}

// Reads exactly n bytes before the deadline: false when the child ended first or timed out.
enum class Got { all, ended, timed_out };
Got read_exact(int fd, unsigned char* out, std::size_t n, double timeout_seconds,
               std::chrono::steady_clock::time_point deadline) {
    for (std::size_t done = 0; done < n;) {
        int wait_ms = -1;
        if (timeout_seconds > 0) {
            const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
            wait_ms = left <= 0 ? 0 : static_cast<int>(std::min(left * 1000.0 + 1.0, 3.6e6));
        }
        pollfd p{fd, POLLIN, 0};
        const int ready = ::poll(&p, 1, wait_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) return Got::timed_out;
        const ssize_t r = ::read(fd, out + done, n - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return Got::ended;
        done += static_cast<std::size_t>(r);
    }
    return Got::all;
}

std::string signal_name(int sig) {
    const char* n = ::sigabbrev_np(sig);
    return "signal " + std::to_string(sig) + (n ? std::string(" (SIG") + n + ")" : std::string());
}

}  // namespace

GoldenCase read_golden_isolated(const std::filesystem::path& file, const ReadOptions& options, double timeout_seconds) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        ::close(fds[0]);
        child(fds[1], file, options);
    }
    ::close(fds[1]);
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(std::min(timeout_seconds, 1e9)));
    std::vector<unsigned char> message;
    std::optional<GoldenCase> c;
    FileStorage storage;
    unsigned char length[8];
    Got got = read_exact(fds[0], length, 8, timeout_seconds, deadline);
    if (got == Got::all) {
        Reader lr{length, 8, kChild};
        const std::uint64_t n = lr.u64();
        if (n == 0 || n > (std::uint64_t{1} << 30)) {
            got = Got::ended;
        } else {
            message.resize(n);
            got = read_exact(fds[0], message.data(), n, timeout_seconds, deadline);
        }
    }
    if (got == Got::all && message[0] == 0) {
        Reader r{message.data(), message.size(), kChild, 1};
        c = decode(r, &storage);
        for (Tensor* t : bytes::case_tensors(*c))
            if (got == Got::all) got = read_exact(fds[0], t->data(), t->nbytes(), timeout_seconds, deadline);
    }
    if (got == Got::timed_out) ::kill(pid, SIGKILL);
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const std::string prefix = printable("golden file '" + file.string() + "': file: ");
    if (got == Got::timed_out)
        throw FileError(FileError::Kind::corrupt, prefix + "reading it took longer than " +
                                                      std::to_string(static_cast<long>(timeout_seconds)) +
                                                      " s; the reading process was killed (a damaged file can make HDF5 loop)");
    if (got == Got::ended)
        throw FileError(FileError::Kind::corrupt,
                        prefix + "reading it crashed the HDF5 library (the reading process was killed by " +
                            (WIFSIGNALED(status) ? signal_name(WTERMSIG(status)) : "an unexpected exit") +
                            "): the file is damaged or hostile");
    if (c) {
        if (options.storage) *options.storage = std::move(storage);
        return std::move(*c);
    }
    Reader r{message.data(), message.size(), kChild, 1};
    if (message[0] == 1) {
        const auto kind = static_cast<FileError::Kind>(message.at(1));
        r.at = 2;
        throw FileError(kind, r.str());
    }
    throw std::runtime_error(r.str());
}

}  // namespace moe::golden
