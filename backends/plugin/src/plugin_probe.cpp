// Loading a plugin runs its code (static constructors, the entry function, precision()) inside
// the tool. A crash or a hang there would end `moe-conform list` or `run` with the shell's signal
// status (139) or never: so the load is tried first in a child process.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

#include "moe/backends/plugin_backend.hpp"
#include "moe/spec/error.hpp"
#include "moe/spec/stdout_to_stderr.hpp"

namespace moe::backends {

void probe_plugin_backend(const std::string& path, double seconds) {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    // The child says that the load returned, one byte down a pipe, before it exits: a plugin that
    // calls exit(0) while loading ends the child with status 0 too, and the tool would then load
    // it again here and end with that status, no report written (CI reads a pass).
    int ends[2];
    if (::pipe(ends) != 0) return;
    const pid_t pid = ::fork();
    if (pid < 0) {  // no child to try it in: load it here, as before
        ::close(ends[0]);
        ::close(ends[1]);
        return;
    }
    if (pid == 0) {
        ::close(ends[0]);
        // What the load prints goes to stderr, not into the tool's report on stdout.
        if (const int saved = stdout_to_stderr_for_good(); saved >= 0) ::close(saved);
        char returned = 'r';
        try {
            load_plugin_backend(path);
        } catch (...) {
            returned = 'f';  // a fault with a message: the load in the parent reports it
        }
        ssize_t written;
        do written = ::write(ends[1], &returned, 1);
        while (written < 0 && errno == EINTR);
        ::_exit(0);
    }
    ::close(ends[1]);
    // Non-blocking: a process the plugin started may hold the write end open.
    ::fcntl(ends[0], F_SETFL, O_NONBLOCK);
    const auto start = std::chrono::steady_clock::now();
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0) {
            ::close(ends[0]);
            return;
        }
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            ::close(ends[0]);
            throw InputError("backend library " + path + ": loading it (its constructors, " +
                             "moe_conform_backend_v2/_v1() and precision()) did not end within " +
                             std::to_string(static_cast<int>(seconds)) + " s");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    char returned = 0;
    const bool said = ::read(ends[0], &returned, 1) == 1;
    ::close(ends[0]);
    if (WIFSIGNALED(status))
        throw InputError("backend library " + path + ": loading it (its constructors, " +
                         "moe_conform_backend_v2/_v1() and precision()) crashed with signal " +
                         std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")");
    if (!said)
        throw InputError("backend library " + path + ": loading it (its constructors, " +
                         "moe_conform_backend_v2/_v1() and precision()) ended the process with exit status " +
                         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                         " before returning: a plugin must not call exit()");
}

}  // namespace moe::backends
