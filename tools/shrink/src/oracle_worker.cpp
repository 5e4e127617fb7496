#include "oracle_worker.hpp"

#include <fcntl.h>
#include <omp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <sstream>

#include "case_wire.hpp"
#include "moe/shrink/crash_guard.hpp"
#include "moe/spec/stdout_to_stderr.hpp"

namespace moe::shrink {

namespace {

// Messages on the socket: an 8-byte length, then the bytes. From the worker, the first byte says
// what follows: 'r' ready (its oracle is made), 'f' + why making it threw, 'v' + a verdict, 't' +
// what the oracle threw. To the worker: a case (case_wire.hpp).

// In the worker, whose end blocks: all of it, or false once the shrinking process is gone.
bool put(int fd, const std::string& message) {
    const std::uint64_t n = message.size();
    std::string frame(reinterpret_cast<const char*>(&n), sizeof n);
    frame += message;
    for (std::size_t done = 0; done < frame.size();) {
        const ssize_t w = ::send(fd, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        done += static_cast<std::size_t>(w);
    }
    return true;
}

bool read_exactly(int fd, char* to, std::size_t n) {
    for (std::size_t done = 0; done < n;) {
        const ssize_t r = ::read(fd, to + done, n - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        done += static_cast<std::size_t>(r);
    }
    return true;
}

// In the worker: the next case, or false when the shrink is over (its end closed).
bool get(int fd, std::string& message) {
    std::uint64_t n = 0;
    if (!read_exactly(fd, reinterpret_cast<char*>(&n), sizeof n)) return false;
    message.resize(n);
    return read_exactly(fd, message.data(), n);
}

// A whole message at the front of `buffer`, taken out of it.
std::optional<std::string> take_message(std::string& buffer) {
    std::uint64_t n = 0;
    if (buffer.size() < sizeof n) return std::nullopt;
    std::memcpy(&n, buffer.data(), sizeof n);
    if (buffer.size() - sizeof n < n) return std::nullopt;
    std::string message = buffer.substr(sizeof n, n);
    buffer.erase(0, sizeof n + n);
    return message;
}

// _exit skips stdio's buffers: what a backend printed would be lost.
[[noreturn]] void end_worker() {
    std::cout.flush();
    std::fflush(nullptr);
    ::_exit(0);
}

[[noreturn]] void worker_main(int fd, const OracleMaker& make, pid_t shrinker) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the shrink (a Ctrl-C, a CI's kill)
    if (::getppid() != shrinker) ::_exit(0);  // it ended before prctl
    // A crash must end the worker by its signal, which is the verdict: the handlers the shrinking
    // process had (a test framework's, a sanitizer's) would turn it into an exit status.
    for (const int sig : crash_signals()) ::signal(sig, SIG_DFL);
    // Verdicts go down the socket; what the backend prints to stdout goes to stderr, not into
    // shrink's summary and repro line.
    if (const int saved = stdout_to_stderr_for_good(); saved >= 0) ::close(saved);
    Oracle oracle;
    try {
        oracle = make();
    } catch (const std::exception& e) {
        put(fd, std::string("f") + e.what());
        end_worker();
    }
    if (!put(fd, "r")) end_worker();
    for (std::string request; get(fd, request);) {
        std::string reply;
        try {
            reply = "v" + wire::encode_verdict(oracle(wire::decode_case(request)));
        } catch (const std::exception& e) {
            reply = std::string("t") + e.what();
        }
        std::fflush(nullptr);  // the backend's prints, before the verdict that ends this run
        if (!put(fd, reply)) break;
    }
    end_worker();
}

// `seconds` from now, on the clock the worker's deadlines are on.
std::chrono::steady_clock::time_point after(double seconds) {
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

// "1", "0.5", "120": a limit as it was given.
std::string seconds_text(double seconds) {
    std::ostringstream s;
    s << seconds;
    return s.str();
}

// How a worker that sent no verdict ended, from its wait status.
std::string how_it_ended(int status) {
    if (WIFSIGNALED(status)) return "was killed by " + crash_signal_text(WTERMSIG(status));
    return "exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

}  // namespace

struct OracleWorker::Reply {
    enum Kind { message, ended, timed_out } kind = message;
    std::string bytes;  // message: what the worker sent
    int status = 0;     // ended: the worker's wait status (it is reaped)
};

OracleWorker::OracleWorker(OracleMaker make) : make_(std::move(make)) {}

OracleWorker::~OracleWorker() {
    if (pid_ > 0) reap(true);
}

int OracleWorker::reap(bool kill_first) {
    int status = 0;
    // Never kill(-1) or kill(0): every process of this user, or this process group.
    if (pid_ > 0) {
        if (kill_first) ::kill(pid_, SIGKILL);
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
    }
    if (fd_ >= 0) ::close(fd_);
    pid_ = -1;
    fd_ = -1;
    buffer_.clear();
    return status;
}

void OracleWorker::start(double limit_seconds) {
    // libgomp's threads (oracle_worker.hpp) go: the worker's OpenMP makes its own.
    omp_pause_resource_all(omp_pause_hard);
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);  // nothing buffered here is written again by the worker
    int ends[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
        throw WorkerFailed(std::string("cannot start a worker process: socketpair: ") + std::strerror(errno));
    const pid_t shrinker = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int error = errno;
        ::close(ends[0]);
        ::close(ends[1]);
        throw WorkerFailed(std::string("cannot start a worker process: fork: ") + std::strerror(error));
    }
    if (pid == 0) {
        ::close(ends[0]);
        worker_main(ends[1], make_, shrinker);
    }
    ::close(ends[1]);
    pid_ = pid;
    fd_ = ends[0];
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);  // a hang is timed, not waited on
    Reply r = receive(after(limit_seconds));
    if (r.kind == Reply::message && r.bytes == "r") return;
    const std::string making = "making the backend in the shrink's worker process";
    if (r.kind == Reply::message && !r.bytes.empty() && r.bytes[0] == 'f') {
        reap(true);
        throw WorkerFailed(r.bytes.substr(1));
    }
    if (r.kind == Reply::timed_out) {
        reap(true);
        throw WorkerFailed(making + " did not end within " + seconds_text(limit_seconds) + " s");
    }
    if (r.kind == Reply::ended) throw WorkerFailed(making + " failed: the worker " + how_it_ended(r.status));
    reap(true);
    throw WorkerFailed(making + ": an unexpected message");
}

OracleWorker::Reply OracleWorker::receive(Clock::time_point deadline) {
    // At most kCheckMs between looks at the worker itself: a process the backend started may hold
    // the socket open after the worker died, and the verdict must not wait for it.
    constexpr int kCheckMs = 100;
    for (;;) {
        if (std::optional<std::string> m = take_message(buffer_)) return {Reply::message, std::move(*m), 0};
        const auto left = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
        if (left <= 0) return {Reply::timed_out, "", 0};
        pollfd p{fd_, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(std::min<double>(std::ceil(left), kCheckMs)));
        if (ready < 0 && errno == EINTR) continue;
        if (ready > 0) {
            char chunk[65536];
            const ssize_t n = ::read(fd_, chunk, sizeof chunk);
            if (n > 0) {
                buffer_.append(chunk, static_cast<std::size_t>(n));
                continue;
            }
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            return {Reply::ended, "", reap(false)};  // its end closed: the worker has ended
        }
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            // Ended, the socket held open by what it started: what it sent before is all there is.
            for (char chunk[65536];;) {
                const ssize_t n = ::read(fd_, chunk, sizeof chunk);
                if (n <= 0) break;
                buffer_.append(chunk, static_cast<std::size_t>(n));
            }
            std::optional<std::string> m = take_message(buffer_);
            pid_ = -1;  // reaped
            reap(false);
            if (m) return {Reply::message, std::move(*m), 0};  // the next run starts a new worker
            return {Reply::ended, "", status};
        }
    }
}

bool OracleWorker::send(const std::string& message, Clock::time_point deadline) {
    const std::uint64_t n = message.size();
    const std::string header(reinterpret_cast<const char*>(&n), sizeof n);
    for (const std::string* part : {&header, &message}) {
        for (std::size_t done = 0; done < part->size();) {
            if (Clock::now() >= deadline) return false;
            const ssize_t w = ::send(fd_, part->data() + done, part->size() - done, MSG_NOSIGNAL);
            if (w > 0) {
                done += static_cast<std::size_t>(w);
                continue;
            }
            if (w < 0 && errno == EINTR) continue;
            if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;  // the worker is gone
            pollfd p{fd_, POLLOUT, 0};
            ::poll(&p, 1, 100);
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {  // gone, its socket held by what it started
                pid_ = -1;  // reaped
                reap(false);
                return false;
            }
        }
    }
    return true;
}

Verdict OracleWorker::run(const golden::GoldenCase& c, double limit_seconds) {
    const std::string request = wire::encode_case(c);
    // The worker takes the case as fast as it reads; the deadline only ends a worker that stopped
    // reading (a stuck one). A generous one: a large case to a small --candidate-seconds.
    const auto sending = [&] {
        if (pid_ < 0) start(limit_seconds);
        return send(request, after(std::max(limit_seconds, 60.0)));
    };
    // A worker that ended between runs (a thread or process a backend left running crashed it) is
    // no verdict on this case: it goes to a new worker.
    if (!sending()) {
        if (pid_ > 0) reap(true);
        if (!sending()) {
            if (pid_ > 0) reap(true);
            throw WorkerFailed("the shrink's worker process ended twice as a case was sent to it");
        }
    }
    Reply r = receive(after(limit_seconds));
    Verdict v;
    v.status = conformance::Status::error;
    switch (r.kind) {
        case Reply::message:
            if (!r.bytes.empty() && r.bytes[0] == 'v') return wire::decode_verdict(r.bytes.substr(1));
            if (pid_ > 0) reap(true);
            throw std::runtime_error(!r.bytes.empty() && r.bytes[0] == 't'
                                         ? "in the shrink's worker process: " + r.bytes.substr(1)
                                         : std::string("the shrink's worker process sent an unexpected message"));
        case Reply::timed_out:
            reap(true);
            v.hung_after = limit_seconds;
            v.reason = "the backend run hangs: it had not returned after " + seconds_text(limit_seconds) +
                       " s, and its worker process was killed";
            return v;
        case Reply::ended:
            if (WIFSIGNALED(r.status)) {
                v.signal = WTERMSIG(r.status);
                v.reason = "the backend run crashed its worker process: " + crash_signal_text(v.signal);
            } else {
                v.reason = "the backend run ended its worker process (" + how_it_ended(r.status) +
                           ") before returning; a backend must not call exit()";
            }
            return v;
    }
    return v;
}

}  // namespace moe::shrink
