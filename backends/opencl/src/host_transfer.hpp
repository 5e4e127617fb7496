#pragma once
// Moving a run's large inputs and outputs between host memory the caller owns (pageable) and the
// device. A GPU's DMA engine reads and writes pinned memory several times faster than pageable
// memory (on an H100 host: about 50 against 6-10 GB/s), so the data goes through pinned staging
// memory, in chunks: a few host threads copy chunks (chunk c on thread c % threads, one memcpy
// each) while the DMA engine moves the chunks already copied (upload) or read (download). CPU
// devices (PoCL) take the same path: the extra host copy is small next to their compute, and one
// path is tested everywhere.
#include <cstddef>
#include <string>

#include "cl_runtime.hpp"

namespace moe::backends::ocl {

// How a transfer is cut: `threads` host threads (the caller's included) copy `chunk` bytes at a
// time between the caller's memory and the staging memory, one DMA command per chunk.
struct StagingPlan {
    unsigned threads = 1;
    std::size_t chunk = std::size_t(1) << 20;
};

// The plan the pipeline uses: MOE_OPENCL_STAGING="THREADSxKIB" (say "8x512") when set, else up to
// 8 threads (no more than the host has) and 1 MiB chunks. A malformed value throws, naming it.
StagingPlan staging_plan();
// "THREADSxKIB" parsed (threads 1-64, chunk 4-65536 KiB); throws std::invalid_argument naming
// `what` (where the text came from) otherwise.
StagingPlan parse_staging_plan(const std::string& text, const std::string& what);

// dst[dst_off, dst_off + bytes) = src, staged through `staging` (pinned, at least `bytes`);
// returns with every chunk copied and its write enqueued.
void upload(const Runtime& rt, const Buffer& dst, std::size_t dst_off, const void* src, std::size_t bytes,
            unsigned char* staging, const StagingPlan& plan = staging_plan());

// dst = src[0, bytes), staged through `staging` (pinned, at least `bytes`); returns with dst
// written (the queue has run everything before the read).
void download(const Runtime& rt, const Buffer& src, std::size_t bytes, void* dst, unsigned char* staging,
              const StagingPlan& plan = staging_plan());

}  // namespace moe::backends::ocl
