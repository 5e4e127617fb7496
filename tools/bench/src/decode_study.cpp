#include "moe/bench/decode_study.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>

#include "moe/backends/cpu_backend.hpp"
#include "moe/bench/machine_rates.hpp"
#include "moe/generator/compressed_synthesis.hpp"
#include "moe/spec/dtype.hpp"
#include "moe/spec/problem.hpp"

namespace moe::bench {

namespace {

// Memory: more than any cache holds, so every expert's bytes come from DRAM. Cache: a slice of
// about this many bytes per thread, called again and again: a core's L2 (1-2 MB) and the L3. A
// smaller slice measures the per-call work instead (192 KiB a thread: u4 at 38 Gweights/s from
// cache against 62 from memory on a Zen 5 host; 1 MiB: 68).
constexpr std::size_t kColdBytes = std::size_t(256) << 20;
constexpr std::size_t kHotBytesPerThread = std::size_t(1024) << 10;
constexpr int kRounds = 7;

// One weight type's tensors, [E, N, K]: plain values, or codes with their scale and zero point.
struct Weights {
    std::string label;
    Tensor w;
    std::optional<Tensor> scale, zero;

    std::size_t bytes() const { return w.nbytes() + (scale ? scale->nbytes() : 0) + (zero ? zero->nbytes() : 0); }
    const Tensor* scale_ptr() const { return scale ? &*scale : nullptr; }
    const Tensor* zero_ptr() const { return zero ? &*zero : nullptr; }
};

// `experts` copies of a one-expert tensor (the timing reads bytes; their values need not differ).
Tensor replicate(const Tensor& one, std::size_t experts) {
    moe::Shape shape = one.shape();
    shape[0] = experts;
    Tensor t(one.dtype(), shape);
    if (dtype_bits(one.dtype()) == 4 && one.size() % 2 != 0) {  // an expert ends inside a byte
        for (std::size_t e = 0; e < experts; ++e)
            for (std::size_t i = 0; i < one.size(); ++i) t.set(e * one.size() + i, one.get(i));
    } else {
        for (std::size_t e = 0; e < experts; ++e) std::memcpy(t.data() + e * one.nbytes(), one.data(), one.nbytes());
    }
    return t;
}

Weights replicate(const Weights& one, std::size_t experts) {
    Weights r{one.label, replicate(one.w, experts), std::nullopt, std::nullopt};
    if (one.scale) r.scale = replicate(*one.scale, experts);
    if (one.zero) r.zero = replicate(*one.zero, experts);
    return r;
}

// One expert of N rows: plain values of about +-0.5 in `type`, or a compressed preset drawn by
// the generator as moe-bench's rows draw it.
Weights one_expert(const std::string& kind, const Shape& s, std::size_t N, std::size_t K) {
    if (kind == "bf16" || kind == "f32") {
        Tensor w(kind == "bf16" ? DType::bf16 : DType::f32, {1, N, K});
        std::vector<double> v(N * K);
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 2654435761u) % 1000) / 1000.0 - 0.5;
        w.set_range(0, v.size(), v.data());
        return {kind, std::move(w), std::nullopt, std::nullopt};
    }
    generator::CaseSpec c;
    c.name = s.name + " " + kind;
    c.seed = 42;
    c.compression = compression_preset(kind, s);
    Problem p;
    generator::synthesize_compressed_weight(p, c, "w", 1, N, K, 0.05);
    Weights r{compression_label(kind, s), std::move(p.inputs.at("w")), std::move(p.inputs.at(scale_input("w"))),
              std::nullopt};
    if (auto z = p.inputs.find(zero_point_input("w")); z != p.inputs.end()) r.zero = std::move(z->second);
    return r;
}

// One pass: `calls` calls of the decode GEMM, expert i % E for call i.
double pass_seconds(const Weights& w, std::size_t calls, const float* a, std::vector<float>& c,
                    int threads, backends::DecodeProducts products) {
    const std::size_t experts = w.w.shape()[0];
    return seconds_of([&] {
        for (std::size_t i = 0; i < calls; ++i)
            backends::cpu_f32_gemm(a, 1, w.w, i % experts, c.data(), threads, w.scale_ptr(), w.zero_ptr(),
                                   products);
    });
}

}  // namespace

void decode_study(const Shape& s, const std::vector<std::string>& weights, int threads) {
    // The first GEMM of one expert: gate and up fused (gemm2: 2I outputs) or one of them (gemm3).
    const std::size_t N = s.type == ExpertType::gemm2_bias_swiglu_clamp ? 2 * s.inter : s.inter, K = s.hidden;
    std::vector<std::string> kinds{"bf16", "f32"};
    kinds.insert(kinds.end(), weights.begin(), weights.end());
    // One row of bf16 values (held as f32), as a bf16 model's decode gives the kernels; every
    // 32-element block of it lies on the int8 kernels' grid (int_dot_activations.hpp), so 4-bit
    // weights can take either dot-product engine: a row for each one this CPU runs, on the same
    // tensors (the cpu backend takes one of them: cpu_backend.hpp, DecodeProducts).
    // On a 64-byte line, as the backend's pipeline keeps its activations: the f32 kernels load
    // them as they are, and a vector load across two lines costs the core two.
    std::vector<float> a_storage(K + 16), c(N);
    float* a = a_storage.data() + (64 - reinterpret_cast<std::uintptr_t>(a_storage.data()) % 64) % 64 / sizeof(float);
    for (std::size_t k = 0; k < K; ++k)
        a[k] = static_cast<float>(bf16_bits_to_f64(f64_to_bf16_bits(std::sin(0.37 * double(k)))));

    using backends::DecodeProducts;
    std::vector<Weights> cold, hot;  // a kind each
    struct Entry {
        std::string label;
        std::size_t kind;
        DecodeProducts products;
    };
    std::vector<Entry> entries;
    for (const auto& kind : kinds) {
        const Weights one = one_expert(kind, s, N, K);
        const double row_bytes = double(one.bytes()) / double(N);
        cold.push_back(replicate(one, std::max<std::size_t>(2, kColdBytes / one.bytes() + 1)));
        // The cache slice: whole items of 32 rows, at least one per thread.
        const std::size_t rows = std::clamp<std::size_t>(
            std::size_t(double(kHotBytesPerThread) * threads / row_bytes) / 32 * 32, 32 * std::size_t(threads), N);
        hot.push_back(one_expert(kind, s, rows, K));
        std::size_t engines = 0;
        if (dtype_bits(one.w.dtype()) == 4)
            for (const DecodeProducts p : {DecodeProducts::int8, DecodeProducts::bf16})
                if (backends::cpu_runs_decode_products(p)) {
                    entries.push_back({one.label + " " + backends::decode_products_name(p), cold.size() - 1, p});
                    ++engines;
                }
        if (engines == 0) entries.push_back({one.label, cold.size() - 1, DecodeProducts::automatic});
    }
    // The engine the backend takes by default; where the CPU runs neither, the f32 kernels.
    const DecodeProducts chosen = backends::cpu_decode_products_default();
    const std::string taken = backends::cpu_runs_decode_products(chosen)
                                  ? backends::decode_products_name(chosen)
                                  : std::string("neither (the f32 kernels)");
    std::printf("moe-bench --decode-study: %s, one expert's first GEMM (N = %zu, K = %zu) against one row of bf16 "
                "values, the cpu backend's decode kernels alone (cpu_f32_gemm), %d threads. cache: a slice of whole "
                "rows (about %zu KiB a thread) called again and again; memory: copies of the expert (over %zu MiB a "
                "type) each read once a pass, the types taking turns pass by pass with a read-bandwidth probe; GB/s "
                "counts every stored byte (codes, scales, zero points); vs_bf16: time per weight from memory against "
                "bf16's; 4-bit types: a row for each dot-product engine this CPU runs (int8, bf16) on the same "
                "tensors, of which the cpu backend takes %s here (MOE_CPU_DECODE_PRODUCTS aside); medians of %d\n",
                s.name.c_str(), N, K, threads, kHotBytesPerThread >> 10, kColdBytes >> 20, taken.c_str(), kRounds);

    // Cache: each type on its own (nothing here waits on memory).
    std::vector<double> hot_seconds;
    for (const Entry& e : entries) {
        const Weights& w = hot[e.kind];
        const std::size_t calls = std::max<std::size_t>(16, (std::size_t(64) << 20) / w.bytes());
        pass_seconds(w, calls, a, c, threads, e.products);  // warm-up: the slice into cache
        std::vector<double> t;
        for (int r = 0; r < kRounds; ++r) t.push_back(pass_seconds(w, calls, a, c, threads, e.products) / double(calls));
        hot_seconds.push_back(median(t));
    }
    // Memory: round by round every type once, then the read probe, so that ratios compare the
    // same stretch of time (read bandwidth drifts on shared hosts).
    ReadProbe read_probe(std::size_t(1) << 30, threads);
    std::vector<std::vector<double>> t(entries.size());
    std::vector<double> read;
    for (int r = 0; r < kRounds; ++r) {
        for (std::size_t j = 0; j < entries.size(); ++j) {
            const Weights& w = cold[entries[j].kind];
            const std::size_t experts = w.w.shape()[0];
            t[j].push_back(pass_seconds(w, experts, a, c, threads, entries[j].products) / double(experts));
        }
        read.push_back(read_probe.bytes() / read_probe.seconds() / 1e9);
    }
    const double read_gbs = median(read);
    std::printf("read bandwidth (%d threads, 1 GiB streamed): %.1f GB/s\n", threads, read_gbs);
    std::printf("%-15s %8s %12s %8s %12s %8s %7s %8s\n", "weights", "bytes/w", "cache_GB/s", "Gw/s", "memory_GB/s",
                "Gw/s", "of_bw", "vs_bf16");
    const double weights_per_expert = double(N) * double(K), bf16_memory = median(t[0]);
    for (std::size_t j = 0; j < entries.size(); ++j) {
        const Weights &memory_w = cold[entries[j].kind], &cache_w = hot[entries[j].kind];
        const double expert_bytes = double(memory_w.bytes()) / double(memory_w.w.shape()[0]);
        const double memory = median(t[j]), gbs = expert_bytes / memory / 1e9;
        const double slice_weights = double(cache_w.w.shape()[1]) * double(K);
        std::printf("%-15s %8.3f %12.1f %8.1f %12.1f %8.1f %7.2f %7.2fx\n", entries[j].label.c_str(),
                    expert_bytes / weights_per_expert, double(cache_w.bytes()) / hot_seconds[j] / 1e9,
                    slice_weights / hot_seconds[j] / 1e9, gbs, weights_per_expert / memory / 1e9, gbs / read_gbs,
                    bf16_memory / memory);
        std::fflush(stdout);
    }
}

}  // namespace moe::bench
