#include "moe/bench/machine_rates.hpp"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "moe/backends/cpu_backend.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::bench {

namespace {

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

struct GemmProbe::State {
    std::size_t M, N, K;
    int threads;
    std::vector<float> a, c;
    Tensor w;
    std::unique_ptr<backends::CpuPackedGemm> packed;  // null when reading in place was faster
    void run() {
        if (packed) packed->run(a.data(), M, 0, c.data());
        else backends::cpu_f32_gemm(a.data(), M, w, 0, c.data(), threads);
    }
};

GemmProbe::GemmProbe(std::size_t M, std::size_t N, std::size_t K, int threads)
    : s_(std::make_unique<State>(State{M, N, K, threads, std::vector<float>(M * K), std::vector<float>(M * N),
                                       Tensor(DType::f32, {1, N, K}), nullptr})) {
    std::vector<double> v(N * K);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 2654435761u) % 1000) / 1000.0 - 0.5;
    s_->w.set_range(0, v.size(), v.data());
    for (std::size_t i = 0; i < s_->a.size(); ++i) s_->a[i] = static_cast<float>((i * 40503u) % 1000) / 1000.0f - 0.5f;
    const auto best_of_3 = [&] {
        s_->run();  // warm-up
        double best = 1e300;
        for (int r = 0; r < 3; ++r) best = std::min(best, seconds_of([&] { s_->run(); }));
        return best;
    };
    const double plain = best_of_3();
    s_->packed = std::make_unique<backends::CpuPackedGemm>(s_->w, threads);
    if (best_of_3() > plain) s_->packed.reset();
}

GemmProbe::~GemmProbe() = default;

double GemmProbe::seconds() {
    return seconds_of([&] { s_->run(); });
}

double GemmProbe::flops() const {
    return 2.0 * static_cast<double>(s_->M) * static_cast<double>(s_->N) * static_cast<double>(s_->K);
}

ReadProbe::ReadProbe(std::size_t bytes, int threads) : buf_(bytes / sizeof(float)), threads_(threads) {
    const long long n = static_cast<long long>(buf_.size());
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long long i = 0; i < n; ++i) buf_[static_cast<std::size_t>(i)] = 1.0f;
    seconds();  // warm-up
}

double ReadProbe::seconds() {
    const std::size_t n = buf_.size();
    const bool avx512 = __builtin_cpu_supports("avx512f");
    static volatile double sink = 0;
    return seconds_of([&] {
        double total = 0;
#pragma omp parallel num_threads(threads_) reduction(+ : total)
        {
            const int t = omp_get_thread_num(), nt = omp_get_num_threads();
            const std::size_t chunk = (n + static_cast<std::size_t>(nt) - 1) / static_cast<std::size_t>(nt);
            const std::size_t b = std::min(n, chunk * static_cast<std::size_t>(t)), e = std::min(n, b + chunk);
            total += avx512 ? sum_avx512(buf_.data() + b, e - b) : sum_portable(buf_.data() + b, e - b);
        }
        sink = sink + total;
    });
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;  // an even count: the middle pair's mean
}

}  // namespace moe::bench
