#pragma once
// Moving a run's large inputs and outputs between host memory the caller owns (pageable) and the
// device. A GPU's DMA engine reads and writes pinned memory several times faster than pageable
// memory (on an H100 host: about 50 against 6-10 GB/s), so the data goes through pinned staging
// memory, in chunks: a few host threads copy chunks (chunk c on thread c % threads, one memcpy
// each) while the DMA engine moves the chunks already copied (upload) or read (download). CPU
// devices (PoCL) take the same path: the extra host copy is small next to their compute, and one
// path is tested everywhere.
#include <cstddef>

#include "cl_runtime.hpp"

namespace moe::backends::ocl {

// dst[dst_off, dst_off + bytes) = src, staged through `staging` (pinned, at least `bytes`);
// returns with every chunk copied and its write enqueued.
void upload(const Runtime& rt, const Buffer& dst, std::size_t dst_off, const void* src, std::size_t bytes,
            unsigned char* staging);

// dst = src[0, bytes), staged through `staging` (pinned, at least `bytes`); returns with dst
// written (the queue has run everything before the read).
void download(const Runtime& rt, const Buffer& src, std::size_t bytes, void* dst, unsigned char* staging);

}  // namespace moe::backends::ocl
