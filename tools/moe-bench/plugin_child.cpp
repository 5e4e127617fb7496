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

namespace moe::bench_cli {

namespace {

// Waits for the child's byte on `fd` for at most `seconds` (0: no limit): 1 read, 0 the pipe
// closed without it, -1 the time ran out.
int wait_for_done(int fd, double seconds, char& done) {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
        int wait_ms = -1;
        if (seconds > 0) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
            if (left <= 0) return -1;
            wait_ms = static_cast<int>(std::min<long long>(left, 60000));
        }
        pollfd p{fd, POLLIN, 0};
        const int r = poll(&p, 1, wait_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) continue;  // checked against the deadline above
        ssize_t n;
        while ((n = read(fd, &done, 1)) < 0 && errno == EINTR) {
        }
        return n == 1 ? 1 : 0;
    }
}

}  // namespace

int run_plugin_in_child(const std::string& backend, const std::function<int()>& work, double timeout_seconds) {
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
        const int rc = work();
        std::fflush(nullptr);
        const char done = 'd';  // work() returned: whatever the status, it is the tool's own
        while (write(fds[1], &done, 1) < 0 && errno == EINTR) {
        }
        _exit(rc);
    }
    close(fds[1]);
    char done = 0;
    const int got = wait_for_done(fds[0], timeout_seconds, done);
    if (got < 0) kill(pid, SIGKILL);  // a hang: the plugin never returns, and moe-bench must
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got < 0) {
        std::fprintf(stderr,
                     "moe-bench: error: backend %s did not finish within --timeout %g s and was killed; the rows "
                     "above are complete\n",
                     backend.c_str(), timeout_seconds);
        return 1;
    }
    if (got == 1 && done == 'd' && WIFEXITED(status)) return WEXITSTATUS(status);
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
