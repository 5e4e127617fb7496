// moe::shrink::CrashGuard, what moe-conform shrink installs around each backend run: each crash
// signal during an armed run writes the run's message and exits with the guard's code (also from
// another thread, and on a full stack); outside a run, a crash is the process's own. Each case
// runs in a forked child, whose exit status and stderr are what is checked.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

#include "moe/shrink/crash_guard.hpp"

using moe::shrink::crash_signal_text;
using moe::shrink::crash_signals;
using moe::shrink::CrashGuard;

namespace {

struct Ended {
    int exit_code = -1;  // -1: killed by a signal
    int signal = 0;      // the signal that killed it
    std::string err;     // what it wrote to stderr
};

// Runs `body` in a forked child with stderr into a pipe; the child exits 0 if `body` returns.
Ended in_child(const std::function<void()>& body) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(fds[0]);
        ::dup2(fds[1], 2);
        // doctest's own handlers are there during a test: the default's behaviour instead.
        for (const int sig : crash_signals()) ::signal(sig, SIG_DFL);
        body();
        ::_exit(0);
    }
    ::close(fds[1]);
    Ended e;
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;)
        if (n > 0) e.err.append(buf, static_cast<std::size_t>(n));
        else if (errno != EINTR) break;
    ::close(fds[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
    return e;
}

std::string message(const std::string& running, const std::string& signal) {
    return "a run on " + running + " crashed (" + signal + ")\nthe file is small.h5\n";
}

// A real fault, not raise(): the handler must also take the kernel's signal.
void segfault() {
    volatile int* volatile p = nullptr;
    *p = 1;
}

// Recursion until the stack is full: the SIGSEGV comes with no stack left to run a handler on.
int recurse(volatile int depth) {
    if (depth < 0) return 0;  // never: a way out, so that this is no infinite recursion to the compiler
    volatile char frame[4096];
    frame[0] = static_cast<char>(depth);
    return recurse(depth + 1) + frame[0];
}

}  // namespace

TEST_CASE("CrashGuard: each crash signal in an armed run writes that run's message and exits with the guard's code") {
    for (const int sig : crash_signals()) {
        CAPTURE(crash_signal_text(sig));
        const Ended e = in_child([sig] {
            CrashGuard guard(message, 6);
            guard.arm("the case as given");
            guard.disarm();
            guard.arm("the candidate 'tokens 67 -> 1'");  // the messages are this run's
            ::raise(sig);
        });
        CHECK(e.exit_code == 6);
        CHECK(e.err == message("the candidate 'tokens 67 -> 1'", crash_signal_text(sig)));
    }
    CHECK(crash_signal_text(SIGSEGV) == "SIGSEGV, a segmentation fault: an invalid memory access");
}

TEST_CASE("CrashGuard: a real fault, one on a backend's own thread, and a full stack are reported too") {
    const Ended fault = in_child([] {
        CrashGuard guard(message, 6);
        guard.arm("run 1");
        segfault();
    });
    CHECK(fault.exit_code == 6);
    CHECK(fault.err == message("run 1", crash_signal_text(SIGSEGV)));
    const Ended thread = in_child([] {
        CrashGuard guard(message, 6);
        guard.arm("run 2");
        std::thread worker(segfault);
        worker.join();
    });
    CHECK(thread.exit_code == 6);
    CHECK(thread.err == message("run 2", crash_signal_text(SIGSEGV)));
    const Ended overflow = in_child([] {
        CrashGuard guard(message, 6);
        guard.arm("run 3");
        recurse(0);
    });
    CHECK(overflow.exit_code == 6);
    CHECK(overflow.err == message("run 3", crash_signal_text(SIGSEGV)));
}

TEST_CASE("CrashGuard: between runs, and once it is gone, a crash is the process's own; one guard at a time") {
    const Ended between = in_child([] {
        CrashGuard guard(message, 6);
        guard.arm("run 1");
        guard.disarm();
        segfault();
    });
    CHECK(between.exit_code == -1);
    CHECK(between.signal == SIGSEGV);
    CHECK(between.err.empty());
    const Ended after = in_child([] {
        {
            CrashGuard guard(message, 6);
            guard.arm("run 1");
        }  // destroyed while armed (an exception out of the run): disarmed, handlers put back
        ::abort();
    });
    CHECK(after.signal == SIGABRT);
    CHECK(after.err.empty());
    // A handler that was there before gets what is not a backend's crash.
    const Ended chained = in_child([] {
        ::signal(SIGFPE, [](int) { ::_exit(42); });
        CrashGuard guard(message, 6);
        ::raise(SIGFPE);
    });
    CHECK(chained.exit_code == 42);
    CHECK(chained.err.empty());
    const Ended second = in_child([] {
        CrashGuard guard(message, 6);
        try {
            CrashGuard another(message, 6);
        } catch (const std::logic_error&) {
            ::_exit(7);
        }
    });
    CHECK(second.exit_code == 7);
}
