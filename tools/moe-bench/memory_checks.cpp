// moe-bench's memory checks (memory_checks.hpp): a layer's bytes and --strategy-stats' tables.
#include "memory_checks.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "moe/spec/error.hpp"

namespace moe::bench_cli {

using moe::bench::Shape;
using moe::bench::StrategyOptions;

// This machine's physical memory in bytes (0 when the system does not say).
double machine_memory() {
    return static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

// The bytes of what the cpu backend's prepare() packs of a shape's weights: each matrix of N
// outputs by K inputs in oneDNN's blocked layout, which on AVX-512 pads it to whole blocks of 64
// N by 16 K f32 values (bf16: 64 by 32, the same bytes). A small expert takes far more than its
// weights: 1 x 1 experts took 12 KiB each, 500,000 of them 7 GB for 0.000 MB of weights.
static double cpu_packed_bytes(const Shape& s) {
    const auto matrix = [](std::size_t n, std::size_t k) {
        return 4.0 * std::ceil(static_cast<double>(n) / 64) * 64 * std::ceil(static_cast<double>(k) / 16) * 16;
    };
    const double first = s.type == moe::ExpertType::gemm2_bias_swiglu_clamp ? matrix(2 * s.inter, s.hidden)
                                                                             : 2 * matrix(s.inter, s.hidden);
    return static_cast<double>(s.experts) * (first + matrix(s.hidden, s.inter));
}

// What a layer of `s` at the largest of `tokens` holds, in bytes, at least (f32 weights, the token
// rows in and out, the K routed rows of the first GEMM), computed in double so that a product past
// 2^64 is a large number, not a wrapped small one. More than the machine's memory: refused with
// the figure, where allocating it would end in bad_alloc (an internal error) or the OOM killer.
void check_fits_memory(const std::vector<Shape>& shapes, const std::vector<std::size_t>& tokens,
                       const std::vector<std::string>& dtypes, std::size_t compressed_rows, bool cpu_backend) {
    const std::size_t largest_t = *std::max_element(tokens.begin(), tokens.end());
    const double t_max = static_cast<double>(largest_t);
    double element = 2;  // the widest --dtype's bytes
    for (const auto& d : dtypes) element = std::max(element, d == "f32" ? 4.0 : 2.0);
    const double memory = machine_memory();
    for (const auto& s : shapes) {
        const double H = static_cast<double>(s.hidden), I = static_cast<double>(s.inter),
                     E = static_cast<double>(s.experts), K = static_cast<double>(s.topk), W = 3.0 * E * H * I;
        // One data type's rows are held at once: its plain problem, and each compressed one (at
        // least half a byte a weight); the cpu backend also keeps what prepare() made of each (the
        // plain weights packed in their type, f16 widened to f32; compressed ones dequantised to
        // f32 when T > 8), padded per expert. Then the activations, the baseline GEMM's operands
        // and the 1 GiB read.
        double bytes = element * W + 0.5 * W * double(compressed_rows);
        const double packed = cpu_packed_bytes(s);
        if (cpu_backend) bytes += packed + (t_max > 8 ? packed * double(compressed_rows) : 0.0);
        bytes += 4.0 * (2.0 * t_max * H + 2.0 * t_max * K * I);
        bytes += 4.0 * (t_max * K * H + 3.0 * I * H + t_max * K * 3.0 * I) + double(std::size_t(1) << 30);
        if (memory > 0 && bytes > memory) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "%.3g GB at T = %zu, more than this machine's %.3g GB of memory", bytes / 1e9,
                          largest_t, memory / 1e9);
            throw moe::InputError("shape " + s.name + " needs at least " + buf);
        }
    }
}

// The bytes --strategy-stats holds at once for shape `s` at T tokens (in double: no wrap-around):
// the routing synthesised with H = I = 1 (its dense [E, T] routing weights, a copy of the E
// experts per token drawn, the T x K indices and weights), the blockwise plan (block_size rows
// for each expert's last block, and the T x K pairs' rows) and the expert_parallel tables (per
// device and per expert). The time it takes grows with the same terms: qwen3-30b-a3b at a
// million tokens held 0.74 GB (peak resident) and took 29 s on a 2-core host.
static double strategy_bytes(const Shape& s, double T, double block_size, double devices) {
    const double E = double(s.experts), K = double(s.topk), pairs = T * K;
    const double routing = 4 * E * T + 8 * E + 48 * pairs + 4 * T + 32 * E;
    const double blocks = std::ceil(pairs / block_size) + E;
    const double blockwise = 8 * E + 8 * blocks * block_size + 16 * blocks;
    const double expert_parallel = 48 * devices + 16 * E + 16 * pairs;
    return routing + blockwise + expert_parallel;
}

// The largest whole v in [1, hi] with fits(v), or 0 if none (fits is monotone: true, then false).
template <class Fits>
std::size_t largest_fitting(double hi, const Fits& fits) {
    double lo = 0;
    while (hi - lo > 1) {
        const double mid = std::floor((lo + hi) / 2);
        (fits(mid) ? lo : hi) = mid;
    }
    return static_cast<std::size_t>(lo);
}

// Refuses a table past this mode's budget (the smaller of 1 GiB and half this machine's memory),
// naming the flag that drives it and its largest value here. Without it, --tokens 10^8 or
// --devices 10^8 ran for minutes, --tokens 10^11 or --block-size 10^10 ended in bad_alloc (exit 3).
void check_strategy_size(const std::vector<Shape>& shapes, const std::vector<std::size_t>& tokens,
                         const StrategyOptions& o) {
    double budget = double(std::size_t(1) << 30);
    if (machine_memory() > 0) budget = std::min(budget, machine_memory() / 2);
    const double bs = double(o.block_size), D = double(o.devices);
    for (const auto& s : shapes) {
        // The decode table synthesises batches of up to 64 tokens whatever --tokens says.
        const double T = std::max(64.0, double(*std::max_element(tokens.begin(), tokens.end())));
        const double bytes = strategy_bytes(s, T, bs, D);
        if (bytes <= budget) continue;
        char buf[160];
        std::snprintf(buf, sizeof buf, "needs about %.3g GB of routing tables, more than the %.3g GB this mode takes",
                      bytes / 1e9, budget / 1e9);
        const std::string head = "--strategy-stats: shape " + s.name + " at T = " + std::to_string(std::size_t(T)) +
                                 " with --block-size " + std::to_string(o.block_size) + " " + buf + ": ";
        std::string flag, given;
        std::size_t most = 0;
        if (strategy_bytes(s, T, 1, D) <= budget) {  // the blocks: block_size rows per expert
            flag = "--block-size", given = std::to_string(o.block_size);
            most = largest_fitting(bs, [&](double v) { return strategy_bytes(s, T, v, D) <= budget; });
        } else if (strategy_bytes(s, 64, 1, D) > budget) {  // a custom shape's experts, at any T
            flag = "--experts", given = std::to_string(s.experts);
            most = largest_fitting(double(s.experts), [&](double v) {
                Shape fewer = s;
                fewer.experts = static_cast<std::size_t>(v);
                return strategy_bytes(fewer, 64, 1, D) <= budget;
            });
        } else {
            flag = "--tokens", given = std::to_string(std::size_t(T));
            most = largest_fitting(T, [&](double v) { return strategy_bytes(s, v, 1, D) <= budget; });
        }
        throw moe::InputError(head + flag + " " + given + " is too large for this mode; at most " + std::to_string(most) +
                              " here");
    }
}

}  // namespace moe::bench_cli
