#include "moe/bench/transfer_study.hpp"

#include <cstdio>
#include <memory>
#include <stdexcept>

#include "moe/backends/opencl_transfer_anchor.hpp"
#include "moe/bench/machine_rates.hpp"
#include "moe/spec/error.hpp"

namespace moe::bench {

namespace {

using backends::OpenclTransferAnchor;

// Plans besides the backend's own: one thread (no parallel copy), the plan of earlier builds
// (4 x 2 MiB), and more and smaller pieces.
const std::vector<std::pair<unsigned, std::size_t>> kPlans = {
    {1, 2048}, {4, 2048}, {4, 1024}, {8, 1024}, {8, 512}, {8, 256}, {16, 512}, {16, 256}};

template <class F>
OpenclTransferAnchor::Seconds median_of(int reps, const F& once) {
    std::vector<double> in, out;
    for (int r = 0; r < reps; ++r) {
        const OpenclTransferAnchor::Seconds s = once();
        in.push_back(s.in);
        out.push_back(s.out);
    }
    return {median(in), median(out)};
}

void row(const char* size, const std::string& way, OpenclTransferAnchor::Seconds s, double bytes) {
    std::printf("%-26s %-30s %9.3f %9.2f %9.3f %9.2f\n", size, way.c_str(), s.in * 1e3, bytes / s.in * 1e-9,
                s.out * 1e3, bytes / s.out * 1e-9);
}

}  // namespace

void transfer_study(const std::string& device, const std::vector<TransferSize>& sizes, int reps) {
    std::string backend_plan;
    try {
        backend_plan = OpenclTransferAnchor::backend_plan();
    } catch (const std::invalid_argument& e) {
        throw InputError(e.what());
    }
    bool header = false;
    for (const TransferSize& z : sizes) {
        std::unique_ptr<OpenclTransferAnchor> a;
        try {
            a = std::make_unique<OpenclTransferAnchor>(device, z.bytes);
        } catch (const std::runtime_error& e) {
            throw InputError(std::string("--transfer-study: ") + e.what());
        }
        if (!header) {
            std::printf("moe-bench --transfer-study: %s; host wall time from the call to the transfer's completion, "
                        "median of %d; staged TxK: T host threads copy K KiB chunks through pinned memory while the "
                        "DMA engine moves the chunks already copied (the backend runs %s; MOE_OPENCL_STAGING=TxK "
                        "changes it)\n",
                        a->device().c_str(), reps, backend_plan.c_str());
            std::printf("%-26s %-30s %9s %9s %9s %9s\n", "size", "way", "in_ms", "in_GB/s", "out_ms", "out_GB/s");
            header = true;
        }
        char size[64];
        if (z.bytes < (std::size_t(1) << 20)) std::snprintf(size, sizeof size, "%.1f KiB", double(z.bytes) / 1024.0);
        else std::snprintf(size, sizeof size, "%.1f MiB", double(z.bytes) / 1048576.0);
        const double bytes = double(a->bytes());
        std::printf("%s\n", z.label.c_str());
        row(size, "pageable, one DMA", median_of(reps, [&] { return a->pageable(); }), bytes);
        row("", "pinned, one DMA", median_of(reps, [&] { return a->pinned(); }), bytes);
        // Hidden states this small travel in the run's one packed upload (a memcpy into pinned
        // memory and one DMA), and only the output takes the staged path.
        const char* whose = OpenclTransferAnchor::backend_stages_input(z.bytes) ? " (backend)" : " (backend: output)";
        row("", "staged " + backend_plan + whose, median_of(reps, [&] { return a->staged(0, 0); }), bytes);
        for (const auto& [threads, kib] : kPlans)
            row("", "staged " + std::to_string(threads) + "x" + std::to_string(kib),
                median_of(reps, [&] { return a->staged(threads, kib << 10); }), bytes);
        std::fflush(stdout);
    }
}

}  // namespace moe::bench
