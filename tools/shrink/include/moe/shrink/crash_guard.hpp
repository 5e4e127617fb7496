#pragma once
// What a backend run that crashes the shrinking process leaves, where the backend runs in that
// process (shrink_case with Options::crashed; moe-conform shrink runs it in a worker process
// instead, shrink_isolated, where a crash is a verdict). Unguarded, a plugin's segfault on some
// small candidate ended the process by the signal (139 to a shell), saying nothing of the file
// that holds the smallest failing case found so far. While a run is armed, a handler for the
// crash signals writes a message made before the run and ends the process with an exit code of
// its own; outside a run, a crash is the process's own (the handler that was there before, the
// default's core dump included).
//
// Async-signal-safe: the handler only reads a message made before the run (no allocation, no
// formatting, no lock), writes it with write(2) and calls _exit(2). The handler claims the run
// with a compare-exchange before it reads, and the next run's messages are made only while no run
// is armed, so a crash on another thread (a plugin's worker) never reads half-made text. The
// shrinking thread gets an alternate signal stack, so that a backend's runaway recursion (SIGSEGV
// on a full stack) is reported too.
#include <functional>
#include <string>
#include <vector>

namespace moe::shrink {

// The signals a crashing backend raises: a bad address (SIGSEGV, SIGBUS), arithmetic (SIGFPE),
// a bad instruction (SIGILL), abort() or a failed assert (SIGABRT).
const std::vector<int>& crash_signals();
// "SIGSEGV, a segmentation fault: an invalid memory access", ... for each of crash_signals();
// "signal N (its strsignal name)" for another.
std::string crash_signal_text(int signal);

// Installs the handlers (one CrashGuard at a time in a process: a second is std::logic_error);
// the destructor puts back the handlers and the signal stack that were there.
class CrashGuard {
public:
    // `message(running, signal_text)`: what to write to stderr when the run described as
    // `running` is ended by the signal crash_signal_text() describes; `exit_code`: then _exit's.
    using Message = std::function<std::string(const std::string& running, const std::string& signal_text)>;
    CrashGuard(Message message, int exit_code);
    ~CrashGuard();
    CrashGuard(const CrashGuard&) = delete;
    CrashGuard& operator=(const CrashGuard&) = delete;

    // Before a backend run (on the thread that runs it): its messages, one per signal, made now.
    void arm(const std::string& running);
    // After it: a crash is no longer the backend's.
    void disarm();

private:
    Message message_;
    std::vector<char> alt_stack_;
};

}  // namespace moe::shrink
