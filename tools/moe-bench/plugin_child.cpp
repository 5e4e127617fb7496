#include "plugin_child.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

namespace moe::bench_cli {

int run_plugin_in_child(const std::string& backend, const std::function<int()>& work) {
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
    ssize_t n;
    while ((n = read(fds[0], &done, 1)) < 0 && errno == EINTR) {
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (n == 1 && done == 'd' && WIFEXITED(status)) return WEXITSTATUS(status);
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
