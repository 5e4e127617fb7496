#include "plugin_child.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace moe::bench_cli {

namespace {

// The child's messages to the parent, one a line: kLine and a line work() sent, then kDone once
// work() returned (whatever its status: the tool's own). A line cut off by the child's end is
// dropped.
constexpr char kLine = 'L', kDone = 'D';

// A limit this long is none (and its deadline in the clock's integer ticks would overflow).
constexpr double kNoLimitPast = 1e9;  // seconds, 31 years

void write_all(int fd, const std::string& text) {
    for (std::size_t at = 0; at < text.size();) {
        const ssize_t n = write(fd, text.data() + at, text.size() - at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // the parent is gone: no one to tell
        at += static_cast<std::size_t>(n);
    }
}

// Reads the child's messages from `fd` until it says done, or ends, or `seconds` run out (0: no
// limit), appending the lines it sent to `lines`: 1 it said done, 0 it ended without that, -1 the
// time ran out. It has ended when the pipe closes, or when it is reaped here (`reaped`, with its
// `status`): a process the plugin started holds the pipe open as long as it lives, and waiting
// for the pipe alone took its 30 s, or the whole --timeout, after a crash.
int read_messages(int fd, pid_t pid, double seconds, std::vector<std::string>& lines, bool& reaped, int& status) {
    using clock = std::chrono::steady_clock;
    constexpr long long kCheckMs = 200;  // how often the child's end is looked for
    if (seconds > kNoLimitPast) seconds = 0;
    const auto deadline = clock::now() + std::chrono::duration<double>(seconds);
    std::string pending;
    for (;;) {
        long long wait_ms = reaped ? 0 : kCheckMs;  // once reaped: what the pipe still holds, then no more
        if (seconds > 0 && !reaped) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
            if (left <= 0) return -1;
            wait_ms = std::min<long long>(left, wait_ms);
        }
        pollfd p{fd, POLLIN, 0};
        const int r = poll(&p, 1, static_cast<int>(wait_ms));
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) {
            if (reaped) return 0;
            reaped = waitpid(pid, &status, WNOHANG) == pid;
            continue;
        }
        char buf[4096];
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) < 0 && errno == EINTR) {
        }
        if (n <= 0) return 0;
        pending.append(buf, static_cast<std::size_t>(n));
        for (std::size_t end; (end = pending.find('\n')) != std::string::npos; pending.erase(0, end + 1)) {
            if (end == 1 && pending[0] == kDone) return 1;
            if (end > 0 && pending[0] == kLine) lines.push_back(pending.substr(1, end - 1));
        }
    }
}

}  // namespace

int run_plugin_in_child(const std::string& backend, const std::function<int(const SendLine&)>& work,
                        double timeout_seconds, std::vector<std::string>& received) {
    std::fflush(nullptr);  // nothing buffered before the fork is printed twice
    int fds[2];
    if (pipe(fds) != 0) {
        std::fprintf(stderr, "moe-bench: error: pipe: %s\n", std::strerror(errno));
        return 3;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        std::fprintf(stderr, "moe-bench: error: fork: %s\n", std::strerror(errno));
        return 3;
    }
    if (pid == 0) {
        close(fds[0]);
        const int rc = work([&](const std::string& line) { write_all(fds[1], kLine + line + '\n'); });
        std::fflush(nullptr);
        write_all(fds[1], std::string(1, kDone) + '\n');
        _exit(rc);
    }
    close(fds[1]);
    bool reaped = false;
    int status = 0;
    const int got = read_messages(fds[0], pid, timeout_seconds, received, reaped, status);
    if (got < 0) kill(pid, SIGKILL);  // a hang: the plugin never returns, and moe-bench must
    close(fds[0]);
    while (!reaped && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got < 0) {
        std::fprintf(stderr,
                     "moe-bench: error: backend %s did not finish within --timeout %g s and was killed; the rows "
                     "above are complete\n",
                     backend.c_str(), timeout_seconds);
        return 1;
    }
    if (got == 1 && WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        std::fprintf(stderr,
                     "moe-bench: error: backend %s crashed while being timed (signal %d, %s); the rows above are "
                     "complete%s\n",
                     backend.c_str(), sig, strsignal(sig),
                     sig == SIGKILL ? " (SIGKILL: the system may have run out of memory)" : "");
    } else {
        std::fprintf(stderr,
                     "moe-bench: error: backend %s ended the process (exit status %d) while being timed, before "
                     "moe-bench finished; the rows above are complete\n",
                     backend.c_str(), WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    return 1;
}

}  // namespace moe::bench_cli
