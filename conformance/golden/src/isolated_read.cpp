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

namespace moe::golden {

namespace {

// ---------------------------------------------------------------------------------------------
// A GoldenCase (and the FileStorage) as bytes: fixed-width little-endian numbers, sized strings,
// tensors as their raw element bytes.

struct Writer {
    std::vector<unsigned char> out;
    void u64(std::uint64_t v) {
        for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
    }
    void f64(double v) {
        std::uint64_t bits;
        std::memcpy(&bits, &v, 8);
        u64(bits);
    }
    void str(const std::string& s) {
        u64(s.size());
        out.insert(out.end(), s.begin(), s.end());
    }
    void tensors(const std::map<std::string, Tensor>& m) {
        u64(m.size());
        for (const auto& [name, t] : m) {
            str(name);
            u64(static_cast<std::uint64_t>(t.dtype()));
            u64(t.rank());
            for (std::size_t d : t.shape()) u64(d);  // the element bytes follow the message
        }
    }
};

struct Reader {
    const std::vector<unsigned char>& in;
    std::size_t at = 0;
    void need(std::size_t n) {
        if (in.size() - at < n) throw std::runtime_error("truncated message from the reading process");
    }
    std::uint64_t u64() {
        need(8);
        std::uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v |= std::uint64_t{in[at + i]} << (8 * i);
        at += 8;
        return v;
    }
    double f64() {
        const std::uint64_t bits = u64();
        double v;
        std::memcpy(&v, &bits, 8);
        return v;
    }
    std::string str() {
        const std::uint64_t n = u64();
        need(n);
        std::string s(in.begin() + static_cast<std::ptrdiff_t>(at), in.begin() + static_cast<std::ptrdiff_t>(at + n));
        at += n;
        return s;
    }
    std::map<std::string, Tensor> tensors() {
        std::map<std::string, Tensor> m;
        for (std::uint64_t n = u64(); n > 0; --n) {
            std::string name = str();
            const auto dt = static_cast<DType>(u64());
            Shape shape(u64());
            for (auto& d : shape) d = u64();
            // Not zero-filled: filled from the stream afterwards, and a case whose bytes do not
            // all arrive is never returned.
            m.emplace(std::move(name), Tensor::uninitialised(dt, shape));
        }
        return m;
    }
};

void encode(Writer& w, const GoldenCase& c, const FileStorage& s) {
    const OpAttributes& a = c.problem.attributes;
    w.str(c.problem.name);
    w.u64(static_cast<std::uint64_t>(a.expert_type));
    w.u64(static_cast<std::uint64_t>(a.convention));
    w.f64(a.expert_alpha);
    w.f64(a.expert_beta);
    w.u64(a.gate_idx.has_value());
    w.u64(static_cast<std::uint64_t>(a.gate_idx.value_or(0)));
    w.u64(c.seed.has_value());
    w.u64(c.seed.value_or(0));
    w.str(c.generator);
    w.str(c.tier);
    w.str(c.description);
    w.u64(c.exact);
    w.tensors(c.problem.inputs);
    w.tensors(c.outputs);
    w.tensors(c.stages);
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
    GoldenCase c;
    OpAttributes& a = c.problem.attributes;
    c.problem.name = r.str();
    a.expert_type = static_cast<ExpertType>(r.u64());
    a.convention = static_cast<Convention>(r.u64());
    a.expert_alpha = r.f64();
    a.expert_beta = r.f64();
    const bool has_gate = r.u64() != 0;
    const auto gate = static_cast<std::int64_t>(r.u64());
    if (has_gate) a.gate_idx = gate;
    const bool has_seed = r.u64() != 0;
    const std::uint64_t seed = r.u64();
    if (has_seed) c.seed = seed;
    c.generator = r.str();
    c.tier = r.str();
    c.description = r.str();
    c.exact = r.u64() != 0;
    c.problem.inputs = r.tensors();
    c.outputs = r.tensors();
    c.stages = r.tensors();
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
        for (const auto* group : {&c.problem.inputs, &c.outputs, &c.stages})
            for (const auto& [name, t] : *group) write_all(fd, t.data(), t.nbytes());
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
        const std::vector<unsigned char> prefix(length, length + 8);
        Reader lr{prefix};
        const std::uint64_t n = lr.u64();
        if (n == 0 || n > (std::uint64_t{1} << 30)) {
            got = Got::ended;
        } else {
            message.resize(n);
            got = read_exact(fds[0], message.data(), n, timeout_seconds, deadline);
        }
    }
    if (got == Got::all && message[0] == 0) {
        Reader r{message, 1};
        c = decode(r, &storage);
        for (auto* group : {&c->problem.inputs, &c->outputs, &c->stages})
            for (auto& [name, t] : *group)
                if (got == Got::all) got = read_exact(fds[0], t.data(), t.nbytes(), timeout_seconds, deadline);
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
    Reader r{message, 1};
    if (message[0] == 1) {
        const auto kind = static_cast<FileError::Kind>(message.at(1));
        r.at = 2;
        throw FileError(kind, r.str());
    }
    throw std::runtime_error(r.str());
}

}  // namespace moe::golden
