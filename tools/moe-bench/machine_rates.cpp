#include "machine_rates.hpp"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "moe/backends/cpu_backend.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::bench {

namespace {

template <class F>
double best_seconds(int reps, F&& f) {
    f();  // warm-up
    double best = 1e300;
    for (int r = 0; r < reps; ++r) {
        const auto s = std::chrono::steady_clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
    }
    return best;
}

__attribute__((target("avx512f"))) double sum_avx512(const float* p, std::size_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    std::size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(p + i));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(p + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_loadu_ps(p + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_loadu_ps(p + i + 48));
    }
    double s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    for (; i < n; ++i) s += p[i];
    return s;
}

double sum_portable(const float* p, std::size_t n) {
    float s[16] = {};
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; ++j) s[j] += p[i + j];
    double t = 0;
    for (float v : s) t += v;
    for (; i < n; ++i) t += p[i];
    return t;
}

}  // namespace

double gemm_gflops(std::size_t M, std::size_t N, std::size_t K, int threads, int reps) {
    std::vector<float> a(M * K), c(M * N);
    Tensor w(DType::f32, {1, N, K});
    std::vector<double> v(N * K);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 2654435761u) % 1000) / 1000.0 - 0.5;
    w.set_range(0, v.size(), v.data());
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 40503u) % 1000) / 1000.0f - 0.5f;
    // The better of the weights read in place and packed once into the library's layout (as the
    // cpu backend's prepare() packs them), so the ratio is against the engine at its best.
    const double plain = best_seconds(reps, [&] { backends::cpu_f32_gemm(a.data(), M, w, 0, c.data(), threads); });
    const backends::CpuPackedGemm packed(w, threads);
    const double s = std::min(plain, best_seconds(reps, [&] { packed.run(a.data(), M, 0, c.data()); }));
    return 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) / s / 1e9;
}

double read_bandwidth_gbs(std::size_t bytes, int threads, int reps) {
    const std::size_t n = bytes / sizeof(float);
    std::vector<float> buf(n);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long long i = 0; i < static_cast<long long>(n); ++i) buf[static_cast<std::size_t>(i)] = 1.0f;
    const bool avx512 = __builtin_cpu_supports("avx512f");
    volatile double sink = 0;
    const double s = best_seconds(reps, [&] {
        double total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
        {
            const int t = omp_get_thread_num(), nt = omp_get_num_threads();
            const std::size_t chunk = (n + static_cast<std::size_t>(nt) - 1) / static_cast<std::size_t>(nt);
            const std::size_t b = std::min(n, chunk * static_cast<std::size_t>(t)), e = std::min(n, b + chunk);
            total += avx512 ? sum_avx512(buf.data() + b, e - b) : sum_portable(buf.data() + b, e - b);
        }
        sink = sink + total;
    });
    return static_cast<double>(bytes) / s / 1e9;
}

}  // namespace moe::bench
