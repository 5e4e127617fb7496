#include "moe/bench/engine_study.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "moe/backends/cpu_backend.hpp"
#include "moe/bench/machine_rates.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::bench {

void engine_study(const std::string& shape, std::size_t n, std::size_t k) {
    // Enough experts that a pass over them is at least 512 MB: every call finds its weights in memory.
    const std::size_t bytes = n * k * sizeof(float);
    const std::size_t experts = std::max<std::size_t>(8, (std::size_t(512) << 20) / bytes + 1);
    Tensor w(DType::f32, {experts, n, k});
    std::vector<double> v(n * k);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 2654435761u) % 1000) / 1000.0 - 0.5;
    Tensor w16(DType::f16, {experts, n, k});  // the same weights in f16, read by our kernels up to 8 rows
    for (std::size_t e = 0; e < experts; ++e) {
        w.set_range(e * n * k, n * k, v.data());
        w16.set_range(e * n * k, n * k, v.data());
    }
    const backends::CpuPackedGemm packed(w, 1);
    std::vector<float> a(64 * k, 0.25f), c(64 * n);
    std::printf("%s: one expert's GEMM C[M, %zu] = A[M, %zu] W^T, f32, 1 thread, weights cold (%zu experts, %.0f MB each); "
                "median of %zu calls\n",
                shape.c_str(), n, k, experts, bytes / 1e6, 2 * experts);
    std::printf("%4s %22s %22s %8s %26s\n", "M", "in place: GFLOP/s GB/s", "packed: GFLOP/s GB/s", "speedup",
                "f16 in place: GFLOP/s GB/s");
    std::size_t e = 0;
    for (std::size_t m : {1, 2, 3, 4, 6, 8, 16, 32, 64}) {
        std::vector<double> plain, pack, half;
        for (std::size_t r = 0; r < 2 * experts; ++r) {
            e = (e + 1) % experts;
            plain.push_back(seconds_of([&] { backends::cpu_f32_gemm(a.data(), m, w, e, c.data(), 1); }));
            e = (e + 1) % experts;
            pack.push_back(seconds_of([&] { packed.run(a.data(), m, e, c.data()); }));
            if (m > 8) continue;
            e = (e + 1) % experts;
            half.push_back(seconds_of([&] { backends::cpu_f32_gemm(a.data(), m, w16, e, c.data(), 1); }));
        }
        const double flops = 2.0 * static_cast<double>(m * n * k), tp = median(plain), tk = median(pack);
        std::printf("%4zu %11.1f %10.1f %11.1f %10.1f %7.2fx", m, flops / tp / 1e9, bytes / tp / 1e9, flops / tk / 1e9,
                    bytes / tk / 1e9, tp / tk);
        if (!half.empty()) {
            const double th = median(half);
            std::printf(" %15.1f %10.1f", flops / th / 1e9, bytes / 2 / th / 1e9);
        }
        std::printf("\n");
    }
}

}  // namespace moe::bench
