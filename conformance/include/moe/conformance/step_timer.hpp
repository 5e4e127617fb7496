#pragma once
// A clock on one step at a time (a golden file being read, a backend run) for the tools that must
// say something while a step goes on for long: the runner's "still running" notices in one process
// and shrink's limit on a backend run. The step itself stays on the caller's thread (a backend
// cannot be interrupted from outside it); a thread of the timer's own only waits and calls back.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace moe::conformance {

class StepTimer {
public:
    // Called on the timer's thread with the step's description and the seconds since its begin(),
    // holding the timer's lock: end() (and so whatever the caller does after the step) waits until
    // it returns, and nothing is called for a step after its end().
    using Fire = std::function<void(const std::string& what, double seconds)>;
    explicit StepTimer(Fire fire);  // throws std::system_error when no thread can be had
    ~StepTimer();
    StepTimer(const StepTimer&) = delete;
    StepTimer& operator=(const StepTimer&) = delete;

    // Step `what` begins: `fire` once it has run `after` seconds, then every `every` seconds after
    // each call (0: only once).
    void begin(const std::string& what, double after, double every = 0);
    void end();

private:
    using Clock = std::chrono::steady_clock;
    void watch();

    Fire fire_;
    std::mutex m_;
    std::condition_variable changed_;
    std::string what_;
    Clock::time_point start_, next_;
    Clock::duration every_{};
    bool running_ = false, stop_ = false;
    std::thread thread_;  // last: started once the members it reads exist
};

}  // namespace moe::conformance
