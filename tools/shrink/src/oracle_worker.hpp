#pragma once
// The worker process of shrink_isolated (shrink.hpp). Forked from the shrinking process, it makes
// the oracle once (OracleMaker: the backend is made in the worker, never in the process that
// forks, as the runner's case workers make theirs), then runs the cases sent to it one after
// another, so a backend's state carries from one run to the next as it did when shrink ran the
// backend in its own process. A run that kills the worker (a signal) or that has not returned when
// its limit is up (the worker is then killed) comes back as that run's verdict; the next run
// starts a new worker.
//
// The shrinking process computes each candidate's reference with OpenMP. GNU libgomp's thread
// pool does not survive fork(): a child that starts a parallel region after its parent ran one
// waits for the parent's threads forever (the cpu backend, a plugin using OpenMP, the judge). So
// the pool is released (omp_pause_resource_all) before each fork; the next parallel region in the
// shrinking process makes a new one.
#include <sys/types.h>

#include <chrono>
#include <string>

#include "moe/shrink/shrink.hpp"

namespace moe::shrink {

class OracleWorker {
public:
    explicit OracleWorker(OracleMaker make);
    ~OracleWorker();  // kills the worker (it holds nothing to save: it would _exit unflushed anyway)
    OracleWorker(const OracleWorker&) = delete;
    OracleWorker& operator=(const OracleWorker&) = delete;

    // `c`'s verdict from the worker (started first when there is none: making its oracle may take
    // up to `limit_seconds` too). A crash, a hang past `limit_seconds` or an exit before the
    // verdict is an ERROR verdict saying so. Throws WorkerFailed when a worker cannot make its
    // oracle; std::runtime_error when the oracle threw in the worker (as it would throw here).
    Verdict run(const golden::GoldenCase& c, double limit_seconds);

private:
    using Clock = std::chrono::steady_clock;
    struct Reply;
    void start(double limit_seconds);
    Reply receive(Clock::time_point deadline);
    bool send(const std::string& message, Clock::time_point deadline);
    // Waits for the worker to end (SIGKILL first when asked), returns its wait status, and forgets
    // it; with no worker (pid_ -1: already reaped) only closes the socket.
    int reap(bool kill_first);

    OracleMaker make_;
    pid_t pid_ = -1;
    int fd_ = -1;             // this end of the worker's socket
    std::string buffer_;      // bytes received and not yet taken as a message
};

}  // namespace moe::shrink
