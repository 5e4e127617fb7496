// Loading a plugin runs its code (static constructors, the entry function, precision()) inside
// the tool. A crash or a hang there would end `moe-conform list` or `run` with the shell's signal
// status (139) or never: so the load is tried first in a child process.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

#include "moe/backends/plugin_backend.hpp"
#include "moe/spec/error.hpp"

namespace moe::backends {

void probe_plugin_backend(const std::string& path, double seconds) {
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) return;  // no child to try it in: load it here, as before
    if (pid == 0) {
        try {
            load_plugin_backend(path);
        } catch (...) {
            ::_exit(2);  // a fault with a message: the load in the parent reports it
        }
        ::_exit(0);
    }
    const auto start = std::chrono::steady_clock::now();
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0) return;
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            throw InputError("backend library " + path + ": loading it (its constructors, " +
                             "moe_conform_backend_v2/_v1() and precision()) did not end within " +
                             std::to_string(static_cast<int>(seconds)) + " s");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (WIFSIGNALED(status))
        throw InputError("backend library " + path + ": loading it (its constructors, " +
                         "moe_conform_backend_v2/_v1() and precision()) crashed with signal " +
                         std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")");
}

}  // namespace moe::backends
