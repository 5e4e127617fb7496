#pragma once
// Moving a run's large inputs and outputs between host memory the caller owns (pageable) and the
// device. A GPU's DMA engine reads and writes pinned memory several times faster than pageable
// memory (on an H100 host: about 50 against 6-10 GB/s), so the data goes through pinned staging
// memory, in chunks: the host copies chunk i (several threads) while the DMA engine moves chunk
// i - 1. CPU devices (PoCL) take the same path: the extra host copy is small next to their
// compute, and one path is tested everywhere.
#include <cstddef>

#include "cl_runtime.hpp"

namespace moe::backends::ocl {

// dst[dst_off, dst_off + bytes) = src, staged through `staging` (pinned, at least `bytes`);
// returns with the copies enqueued, the last chunk's host copy done.
void upload(const Runtime& rt, const Buffer& dst, std::size_t dst_off, const void* src, std::size_t bytes,
            unsigned char* staging);

// dst = src[0, bytes), staged through `staging` (pinned, at least `bytes`); returns with dst
// written (the queue has run everything before the read).
void download(const Runtime& rt, const Buffer& src, std::size_t bytes, void* dst, unsigned char* staging);

// memcpy with several threads for large copies.
void parallel_copy(void* dst, const void* src, std::size_t bytes);

}  // namespace moe::backends::ocl
