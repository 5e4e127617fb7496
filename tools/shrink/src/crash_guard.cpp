#include "moe/shrink/crash_guard.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace moe::shrink {

namespace {

constexpr std::array<int, 5> kSignals = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

// The handler's state: one guard per process, so file-level (a handler gets no user pointer).
// g_armed: 1 while a run goes on, 0 between runs, kClaimed once a handler took the run's messages
// (it then ends the process; arm and disarm never touch them again). The messages are written
// only at 0, and a handler reads them only once it has turned 1 into kClaimed by a
// compare-exchange: never both at once, whatever thread crashes.
constexpr int kArmed = 1, kClaimed = 2;
std::array<std::string, kSignals.size()> g_messages;
std::atomic<int> g_armed{0};
std::atomic<bool> g_installed{false};
int g_exit_code = 0;
struct sigaction g_previous[kSignals.size()];
stack_t g_previous_stack;

std::size_t index_of(int sig) {
    return static_cast<std::size_t>(std::find(kSignals.begin(), kSignals.end(), sig) - kSignals.begin());
}

void write_all(const std::string& text) {
    for (std::size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(2, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        done += static_cast<std::size_t>(n);
    }
}

// Not a crash in a backend run: to the handler that was there before, as if this one had not
// been installed (the default's core dump, or a sanitizer's report).
void pass_on(int sig, siginfo_t* info, void* context, std::size_t k) {
    const struct sigaction& before = g_previous[k];
    if ((before.sa_flags & SA_SIGINFO) && before.sa_sigaction) {
        before.sa_sigaction(sig, info, context);
    } else if (!(before.sa_flags & SA_SIGINFO) && before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
        before.sa_handler(sig);
    } else {
        // The default (or ignoring): put it back and send the signal again, delivered once this
        // handler returns (a fault also recurs as the instruction runs again).
        ::sigaction(sig, &before, nullptr);
        ::raise(sig);
    }
}

extern "C" void on_crash(int sig, siginfo_t* info, void* context) {
    const std::size_t k = index_of(sig);
    int state = kArmed;
    if (!g_armed.compare_exchange_strong(state, kClaimed)) {
        if (state == kClaimed)
            for (;;) ::pause();  // another thread's crash is being reported: its _exit ends this one
        const int saved = errno;  // a handler that returns leaves errno as it found it
        pass_on(sig, info, context, k);  // between runs
        errno = saved;
        return;
    }
    write_all(g_messages[k]);
    ::_exit(g_exit_code);
}

// Once a handler claimed the run, this thread only waits for the process to end.
[[noreturn]] void wait_for_exit() {
    for (;;) ::pause();
}

}  // namespace

const std::vector<int>& crash_signals() {
    static const std::vector<int> signals(kSignals.begin(), kSignals.end());
    return signals;
}

std::string crash_signal_text(int signal) {
    switch (signal) {
        case SIGSEGV: return "SIGSEGV, a segmentation fault: an invalid memory access";
        case SIGBUS: return "SIGBUS, a bus error: an invalid memory access";
        case SIGFPE: return "SIGFPE, an arithmetic fault such as an integer division by zero";
        case SIGILL: return "SIGILL, an illegal instruction (one this CPU lacks, or a corrupt jump)";
        case SIGABRT: return "SIGABRT: abort(), a failed assert or an uncaught C++ exception";
        // A worker of shrink_isolated may end by any signal; SIGKILL that no one here sent is
        // most often the kernel's out-of-memory killer.
        case SIGKILL: return "SIGKILL (the system may have run out of memory)";
        default: return "signal " + std::to_string(signal) + " (" + ::strsignal(signal) + ")";
    }
}

CrashGuard::CrashGuard(Message message, int exit_code) : message_(std::move(message)) {
    if (g_installed.exchange(true)) throw std::logic_error("CrashGuard: one at a time in a process");
    g_exit_code = exit_code;
    g_armed = 0;
    // A stack overflow's SIGSEGV cannot run a handler on the full stack: this thread gets its own.
    alt_stack_.resize(std::max<std::size_t>(64 * 1024, static_cast<std::size_t>(SIGSTKSZ)));
    stack_t stack{};
    stack.ss_sp = alt_stack_.data();
    stack.ss_size = alt_stack_.size();
    ::sigaltstack(&stack, &g_previous_stack);
    struct sigaction action {};
    action.sa_sigaction = on_crash;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    for (std::size_t k = 0; k < kSignals.size(); ++k) ::sigaction(kSignals[k], &action, &g_previous[k]);
}

CrashGuard::~CrashGuard() {
    disarm();
    for (std::size_t k = 0; k < kSignals.size(); ++k) ::sigaction(kSignals[k], &g_previous[k], nullptr);
    ::sigaltstack(&g_previous_stack, nullptr);
    g_installed = false;
}

void CrashGuard::arm(const std::string& running) {
    if (g_armed.load() == kArmed) disarm();     // armed twice: the last run's messages go
    if (g_armed.load() == kClaimed) wait_for_exit();  // a handler reads the messages
    for (std::size_t k = 0; k < kSignals.size(); ++k) g_messages[k] = message_(running, crash_signal_text(kSignals[k]));
    int idle = 0;
    if (!g_armed.compare_exchange_strong(idle, kArmed)) wait_for_exit();
}

void CrashGuard::disarm() {
    int state = kArmed;
    if (!g_armed.compare_exchange_strong(state, 0) && state == kClaimed) wait_for_exit();
}

}  // namespace moe::shrink
