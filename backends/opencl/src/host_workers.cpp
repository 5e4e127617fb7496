#include "host_workers.hpp"

#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace moe::backends::ocl {

namespace {

class Helpers {
public:
    void run(unsigned n, const std::function<void(unsigned)>& job) {
        std::lock_guard<std::mutex> turn(turn_);
        {
            std::lock_guard<std::mutex> lock(m_);
            while (threads_.size() + 1 < n) {
                const unsigned id = unsigned(threads_.size()) + 1;
                threads_.emplace_back([this, id] { loop(id); });
            }
            job_ = &job;
            taking_part_ = n - 1;
            pending_ = n - 1;
            error_ = nullptr;
            ++round_;
        }
        wake_.notify_all();
        try {
            job(0);
        } catch (...) {
            std::lock_guard<std::mutex> lock(m_);
            if (!error_) error_ = std::current_exception();
        }
        std::unique_lock<std::mutex> lock(m_);
        done_.wait(lock, [&] { return pending_ == 0; });
        job_ = nullptr;
        if (error_) std::rethrow_exception(error_);
    }

private:
    void loop(unsigned id) {
        std::uint64_t seen = 0;
        std::unique_lock<std::mutex> lock(m_);
        for (;;) {
            wake_.wait(lock, [&] { return round_ != seen; });
            seen = round_;
            if (id > taking_part_) continue;  // a round with fewer threads than exist
            const std::function<void(unsigned)>* job = job_;
            lock.unlock();
            std::exception_ptr error;
            try {
                (*job)(id);
            } catch (...) {
                error = std::current_exception();
            }
            lock.lock();
            if (error && !error_) error_ = error;
            if (--pending_ == 0) done_.notify_one();
        }
    }

    std::mutex turn_;  // one round at a time
    std::mutex m_;
    std::condition_variable wake_, done_;
    std::vector<std::thread> threads_;
    const std::function<void(unsigned)>* job_ = nullptr;
    unsigned taking_part_ = 0, pending_ = 0;
    std::uint64_t round_ = 0;
    std::exception_ptr error_;
};

// The process's helpers. Never destroyed: the threads sleep until the process ends, so no exit
// path has to stop and join them. After fork() the child has none of the parent's threads, so
// it gets a set of its own (the parent's object is left alone: its mutexes may be held).
Helpers& helpers() {
    static std::mutex m;
    static Helpers* h = nullptr;
    static pid_t owner = 0;
    std::lock_guard<std::mutex> lock(m);
    if (!h || owner != getpid()) {
        h = new Helpers;
        owner = getpid();
    }
    return *h;
}

}  // namespace

void run_on_helpers(unsigned n, const std::function<void(unsigned)>& job) {
    if (n <= 1) {
        if (n == 1) job(0);
        return;
    }
    helpers().run(n, job);
}

}  // namespace moe::backends::ocl
