#include "moe/conformance/step_timer.hpp"

#include <algorithm>

namespace moe::conformance {

namespace {
// Seconds as a clock duration; a span too large for the clock (1e300 s) is no limit, not an
// overflow into the past.
std::chrono::steady_clock::duration span(double seconds) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(std::clamp(seconds, 0.0, 1e9)));
}
}  // namespace

StepTimer::StepTimer(Fire fire) : fire_(std::move(fire)), thread_([this] { watch(); }) {}

StepTimer::~StepTimer() {
    {
        const std::lock_guard<std::mutex> lock(m_);
        stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
}

void StepTimer::begin(const std::string& what, double after, double every) {
    {
        const std::lock_guard<std::mutex> lock(m_);
        what_ = what;
        start_ = Clock::now();
        next_ = start_ + span(after);
        every_ = every > 0 ? span(every) : Clock::duration::zero();
        running_ = true;
    }
    changed_.notify_all();
}

void StepTimer::end() {
    {
        const std::lock_guard<std::mutex> lock(m_);
        running_ = false;
    }
    changed_.notify_all();
}

void StepTimer::watch() {
    std::unique_lock<std::mutex> lock(m_);
    while (!stop_) {
        if (!running_) {
            changed_.wait(lock);
            continue;
        }
        // Woken early by begin(), end() or the destructor: look again.
        if (changed_.wait_until(lock, next_) == std::cv_status::no_timeout || !running_ || stop_ ||
            Clock::now() < next_)
            continue;
        fire_(what_, std::chrono::duration<double>(Clock::now() - start_).count());
        if (every_ == Clock::duration::zero())
            running_ = false;  // once: until the next begin()
        else
            next_ = Clock::now() + every_;
    }
}

}  // namespace moe::conformance
