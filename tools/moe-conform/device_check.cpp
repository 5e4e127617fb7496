#include "device_check.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "moe/backends/registry.hpp"
#include "moe/spec/error.hpp"

namespace moe::conform_cli {

void check_device_exists(const std::string& spec) {
    if (spec.empty()) return;
    int fds[2];
    if (::pipe(fds) != 0) return;  // no check rather than no run: the cases then SKIP with the reason
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        return;
    }
    if (pid == 0) {
        ::close(fds[0]);
        std::string why;
        try {
            why = backends::device_problem(spec);
        } catch (...) {
        }
        for (std::size_t at = 0; at < why.size();) {
            const ssize_t n = ::write(fds[1], why.data() + at, why.size() - at);
            if (n <= 0) break;
            at += static_cast<std::size_t>(n);
        }
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string why;
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        why.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!why.empty()) throw InputError("--device " + spec + ": " + why);
}

}  // namespace moe::conform_cli
