#include "moe/shrink/run_watchdog.hpp"

#include <algorithm>

namespace moe::shrink {

double default_candidate_seconds(double original_seconds, double max_seconds) {
    const double wanted = std::max(kMinCandidateSeconds, kCandidateSlowdown * original_seconds);
    return std::min(wanted, std::max(kMinCandidateSeconds, max_seconds));
}

RunWatchdog::RunWatchdog(Overrun overrun) : overrun_(std::move(overrun)), thread_([this] { watch(); }) {}

RunWatchdog::~RunWatchdog() {
    {
        std::lock_guard<std::mutex> lock(m_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void RunWatchdog::begin(const std::string& what, double limit_seconds) {
    {
        std::lock_guard<std::mutex> lock(m_);
        running_ = true;
        fired_ = false;
        what_ = what;
        limit_ = limit_seconds;
        // A limit too large for the clock (1e300 s) is no limit, not an overflow into the past.
        const auto span = std::chrono::duration<double>(std::min(limit_seconds, 1e9));
        deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(span);
    }
    cv_.notify_all();
}

void RunWatchdog::end() {
    std::lock_guard<std::mutex> lock(m_);
    running_ = false;
}

void RunWatchdog::watch() {
    std::unique_lock<std::mutex> lock(m_);
    while (!stop_) {
        if (!running_ || fired_) {
            cv_.wait(lock);
            continue;
        }
        // wait_until returns early on a notify (begin() moved the deadline, or stop): look again.
        if (cv_.wait_until(lock, deadline_) == std::cv_status::timeout && running_ && !fired_ && !stop_ &&
            Clock::now() >= deadline_) {
            fired_ = true;
            overrun_(what_, limit_);  // under the lock: the run's end() waits for it
        }
    }
}

}  // namespace moe::shrink
