#include "host_transfer.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <thread>
#include <vector>

#include "environment_setting.hpp"
#include "host_workers.hpp"

namespace moe::backends::ocl {

namespace {

std::size_t chunks_of(std::size_t bytes, const StagingPlan& plan) { return (bytes + plan.chunk - 1) / plan.chunk; }

// job(c) for every chunk c, chunk c on thread c % threads (in increasing c on each thread).
template <class Job>
void over_chunks(std::size_t chunks, const StagingPlan& plan, const Job& job) {
    const unsigned threads = unsigned(std::min<std::size_t>(plan.threads, chunks));
    run_on_helpers(threads, [&](unsigned t) {
        for (std::size_t c = t; c < chunks; c += threads) job(c);
    });
}

}  // namespace

StagingPlan parse_staging_plan(const std::string& text, const std::string& what) {
    const auto bad = [&] {
        return std::invalid_argument(what + ": '" + text +
                                     "' is not THREADSxKIB (threads 1-64, chunk 4-65536 KiB; for example 8x1024)");
    };
    const std::size_t x = text.find('x');
    if (x == std::string::npos || x == 0 || x + 1 == text.size()) throw bad();
    const std::string t = text.substr(0, x), k = text.substr(x + 1);
    const auto digits = [](const std::string& s) {
        return s.size() <= 6 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (!digits(t) || !digits(k)) throw bad();
    const unsigned long threads = std::stoul(t), kib = std::stoul(k);
    if (threads < 1 || threads > 64 || kib < 4 || kib > 65536) throw bad();
    return {unsigned(threads), std::size_t(kib) << 10};
}

StagingPlan staging_plan() {
    static const StagingPlan plan = [] {
        if (const auto v = environment_setting("MOE_OPENCL_STAGING"))
            return parse_staging_plan(*v, "MOE_OPENCL_STAGING");
        // Eight streams of memcpy and 1 MiB chunks: on the H200's host (16 cores) they moved 45 MiB
        // in 1.6 ms and out 1.9 ms, where four threads and 2 MiB chunks took 2.6 and 3.0 ms
        // (moe-bench --transfer-study; docs/opencl-backend.md). More threads than the host has
        // only wait for each other.
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        return StagingPlan{std::min(8u, cores), std::size_t(1) << 20};
    }();
    return plan;
}

void upload(const Runtime& rt, const Buffer& dst, std::size_t dst_off, const void* src, std::size_t bytes,
            unsigned char* staging, const StagingPlan& plan) {
    // OpenCL's enqueue calls are thread-safe; the chunks' writes are disjoint, so their order in
    // the in-order queue does not matter, and all are enqueued before the kernels that read them.
    over_chunks(chunks_of(bytes, plan), plan, [&](std::size_t c) {
        const std::size_t at = c * plan.chunk, n = std::min(plan.chunk, bytes - at);
        std::memcpy(staging + at, static_cast<const unsigned char*>(src) + at, n);
        rt.write(dst, dst_off + at, n, staging + at);
        rt.flush();  // the DMA starts while the host copies the next chunks
    });
}

void download(const Runtime& rt, const Buffer& src, std::size_t bytes, void* dst, unsigned char* staging,
              const StagingPlan& plan) {
    const std::size_t chunks = chunks_of(bytes, plan);
    std::vector<cl_event> done(chunks, nullptr);
    std::exception_ptr error;
    try {
        for (std::size_t c = 0; c < chunks; ++c)
            done[c] = rt.read_async(src, c * plan.chunk, std::min(plan.chunk, bytes - c * plan.chunk),
                                    staging + c * plan.chunk);
        rt.flush();
        over_chunks(chunks, plan, [&](std::size_t c) {
            check(clWaitForEvents(1, &done[c]), "clWaitForEvents");
            const std::size_t at = c * plan.chunk;
            std::memcpy(static_cast<unsigned char*>(dst) + at, staging + at, std::min(plan.chunk, bytes - at));
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
