#include "host_transfer.hpp"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

namespace moe::backends::ocl {

namespace {

constexpr std::size_t kChunk = std::size_t(4) << 20;          // bytes per DMA command
constexpr std::size_t kParallelMin = std::size_t(1) << 20;    // smaller copies: one thread
constexpr unsigned kThreads = 4;                              // a few streams fill a host's memory bandwidth

}  // namespace

// Threads started for the copy and joined after it, so nothing is left spinning between runs (with
// an OpenMP pool, some runs on the H100 host stalled for tens of ms; idle pool threads competing
// with the driver's for the CPUs are the likely cause).
void parallel_copy(void* dst, const void* src, std::size_t bytes) {
    if (bytes < kParallelMin) {
        std::memcpy(dst, src, bytes);
        return;
    }
    const std::size_t slice = (bytes / kThreads + 63) / 64 * 64;
    const auto copy = [&](unsigned t) {
        const std::size_t at = std::min(bytes, t * slice);
        std::memcpy(static_cast<unsigned char*>(dst) + at, static_cast<const unsigned char*>(src) + at,
                    std::min(slice, bytes - at));
    };
    std::vector<std::thread> helpers;
    for (unsigned t = 1; t < kThreads; ++t) helpers.emplace_back(copy, t);
    copy(0);
    for (auto& h : helpers) h.join();
}

void upload(const Runtime& rt, const Buffer& dst, std::size_t dst_off, const void* src, std::size_t bytes,
            unsigned char* staging) {
    for (std::size_t at = 0; at < bytes; at += kChunk) {
        const std::size_t n = std::min(kChunk, bytes - at);
        parallel_copy(staging + at, static_cast<const unsigned char*>(src) + at, n);
        rt.write(dst, dst_off + at, n, staging + at);
        rt.flush();  // the DMA starts while the host copies the next chunk
    }
}

void download(const Runtime& rt, const Buffer& src, std::size_t bytes, void* dst, unsigned char* staging) {
    std::vector<cl_event> done;
    for (std::size_t at = 0; at < bytes; at += kChunk)
        done.push_back(rt.read_async(src, at, std::min(kChunk, bytes - at), staging + at));
    rt.flush();
    for (std::size_t c = 0; c < done.size(); ++c) {
        check(clWaitForEvents(1, &done[c]), "clWaitForEvents");
        clReleaseEvent(done[c]);
        const std::size_t at = c * kChunk;
        parallel_copy(static_cast<unsigned char*>(dst) + at, staging + at, std::min(kChunk, bytes - at));
    }
}

}  // namespace moe::backends::ocl
