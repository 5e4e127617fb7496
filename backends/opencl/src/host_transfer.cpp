#include "host_transfer.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace moe::backends::ocl {

namespace {

constexpr std::size_t kChunk = std::size_t(2) << 20;  // bytes per DMA command and per host memcpy
constexpr unsigned kThreads = 4;                      // a few streams fill a host's memory bandwidth

std::size_t chunks_of(std::size_t bytes) { return (bytes + kChunk - 1) / kChunk; }

// job(c) for every chunk c < chunks, chunk c on thread c % threads (in increasing c on each
// thread), with up to kThreads threads started for the transfer and joined after it, so nothing
// is left spinning between runs (with an OpenMP pool, some runs on the H100 host stalled for tens
// of ms; idle pool threads competing with the driver's for the CPUs are the likely cause). The
// first exception is rethrown once every thread has finished.
template <class Job>
void over_chunks(std::size_t chunks, const Job& job) {
    const unsigned threads = unsigned(std::min<std::size_t>(kThreads, chunks));
    std::mutex m;
    std::exception_ptr error;
    const auto work = [&](unsigned t) {
        try {
            for (std::size_t c = t; c < chunks; c += threads) job(c);
        } catch (...) {
            std::lock_guard<std::mutex> lock(m);
            if (!error) error = std::current_exception();
        }
    };
    std::vector<std::thread> helpers;
    for (unsigned t = 1; t < threads; ++t) helpers.emplace_back(work, t);
    work(0);
    for (auto& h : helpers) h.join();
    if (error) std::rethrow_exception(error);
}

}  // namespace

void upload(const Runtime& rt, const Buffer& dst, std::size_t dst_off, const void* src, std::size_t bytes,
            unsigned char* staging) {
    // OpenCL's enqueue calls are thread-safe; the chunks' writes are disjoint, so their order in
    // the in-order queue does not matter, and all are enqueued before the kernels that read them.
    over_chunks(chunks_of(bytes), [&](std::size_t c) {
        const std::size_t at = c * kChunk, n = std::min(kChunk, bytes - at);
        std::memcpy(staging + at, static_cast<const unsigned char*>(src) + at, n);
        rt.write(dst, dst_off + at, n, staging + at);
        rt.flush();  // the DMA starts while the host copies the next chunks
    });
}

void download(const Runtime& rt, const Buffer& src, std::size_t bytes, void* dst, unsigned char* staging) {
    const std::size_t chunks = chunks_of(bytes);
    std::vector<cl_event> done(chunks, nullptr);
    std::exception_ptr error;
    try {
        for (std::size_t c = 0; c < chunks; ++c)
            done[c] = rt.read_async(src, c * kChunk, std::min(kChunk, bytes - c * kChunk), staging + c * kChunk);
        rt.flush();
        over_chunks(chunks, [&](std::size_t c) {
            check(clWaitForEvents(1, &done[c]), "clWaitForEvents");
            const std::size_t at = c * kChunk;
            std::memcpy(static_cast<unsigned char*>(dst) + at, staging + at, std::min(kChunk, bytes - at));
        });
    } catch (...) {
        error = std::current_exception();
    }
    if (error) clFinish(rt.queue());  // nothing left reading into the staging memory
    for (cl_event e : done)
        if (e) clReleaseEvent(e);
    if (error) std::rethrow_exception(error);
}

}  // namespace moe::backends::ocl
