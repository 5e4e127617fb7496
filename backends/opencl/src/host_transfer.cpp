#include "host_transfer.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace moe::backends::ocl {

namespace {

constexpr std::size_t kChunk = std::size_t(4) << 20;     // bytes per DMA command
constexpr std::size_t kParallelMin = std::size_t(256) << 10;  // smaller copies: one thread
constexpr std::size_t kSlice = std::size_t(256) << 10;   // one thread's share of a parallel copy

}  // namespace

void parallel_copy(void* dst, const void* src, std::size_t bytes) {
    if (bytes < kParallelMin) {
        std::memcpy(dst, src, bytes);
        return;
    }
    const long long slices = static_cast<long long>((bytes + kSlice - 1) / kSlice);
    const int threads = std::min(8, omp_get_max_threads());  // a few streams fill a host's memory bandwidth
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long long s = 0; s < slices; ++s) {
        const std::size_t at = static_cast<std::size_t>(s) * kSlice;
        std::memcpy(static_cast<unsigned char*>(dst) + at, static_cast<const unsigned char*>(src) + at,
                    std::min(kSlice, bytes - at));
    }
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
