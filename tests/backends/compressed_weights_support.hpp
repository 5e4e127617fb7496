#pragma once
// White-box helpers for the compressed decode kernels' tests (test_cpu_compressed.cpp,
// test_cpu_int_dot.cpp): random 4-bit weights with their scales and zero points, rows of bf16
// activations, and the check of a product against the f64 one within the f32 chain's bound.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "compressed_kernels.hpp"
#include "element_convert.hpp"
#include "moe/spec/problem.hpp"
#include "weight_view.hpp"

namespace moe::test {

using moe::backends::cpu::WeightView;

struct Weights {
    Tensor w, scale, zero;
    WeightView view(std::size_t e, bool zp) const {
        return moe::backends::cpu::expert_view(w, e, WeightLayout::NK, &scale, zp ? &zero : nullptr);
    }
};

// Random 4-bit codes (every code, MXFP4's NaN-free E2M1 included), per-group scales (f16, or E8M0
// powers of two), zero points over the type's whole range (in the weight's type, or f16); one row
// of scales and zero points for every output row when shared.
inline Weights random_weights(DType t, std::size_t E, std::size_t N, std::size_t K, std::size_t gs, DType zero_type,
                       std::mt19937& rng, bool shared = false) {
    Weights r;
    r.w = Tensor(t, {E, N, K});
    for (std::size_t i = 0; i < r.w.nbytes(); ++i) r.w.data()[i] = static_cast<unsigned char>(rng());
    const std::size_t G = K / gs, rows = shared ? 1 : N;
    r.scale = Tensor(t == DType::f4e2m1 ? DType::f8e8m0 : DType::f16, {E, rows, G});
    r.zero = Tensor(zero_type, {E, rows, G});
    std::uniform_real_distribution<double> u(0.5, 2.0);
    for (std::size_t i = 0; i < E * rows * G; ++i) {
        const int e = static_cast<int>(rng() % 9) - 8;
        r.scale.set(i, t == DType::f4e2m1 ? std::ldexp(1.0, e) : std::ldexp(u(rng), e));
        const int z = static_cast<int>(rng() % 16);
        r.zero.set(i, t == DType::i4 ? z - 8 : z);
    }
    return r;
}

// M rows of bf16 values (as f32) of mixed magnitudes, some zeros and negative zeros.
inline std::vector<float> bf16_rows(std::size_t M, std::size_t K, std::mt19937& rng) {
    std::vector<float> a(M * K);
    std::normal_distribution<double> nd;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const unsigned pick = rng() % 16;
        double v = nd(rng) * std::ldexp(1.0, static_cast<int>(rng() % 21) - 10);
        if (pick == 0) v = 0.0;
        if (pick == 1) v = -0.0;
        if (pick == 2) v = std::ldexp(1.0, -100);  // the smallest magnitude the kernels take
        a[i] = static_cast<float>(moe::bf16_bits_to_f64(moe::backends::cpu::f32_to_bf16_bits(static_cast<float>(v))));
    }
    return a;
}

// C against the f64 product of A and the exactly dequantised weights: within the f32 bound
// (K products summed, scaled, added: (K + 3) u sum |w x|, u = 2^-24).
inline void check_against_f64(const std::vector<float>& A, std::size_t M, const WeightView& W, const std::vector<float>& C) {
    std::vector<double> wf(W.N * W.K);
    moe::backends::cpu::dequantize_rows(W, 0, W.N, wf.data());
    const double u = std::ldexp(1.0, -24);
    std::size_t bad = 0;
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t n = 0; n < W.N; ++n) {
            double exact = 0.0, mag = 0.0;
            for (std::size_t k = 0; k < W.K; ++k) {
                exact += wf[n * W.K + k] * A[m * W.K + k];
                mag += std::abs(wf[n * W.K + k] * A[m * W.K + k]);
            }
            const double bound = static_cast<double>(W.K + 3) * u * mag + 1e-44;
            if (!(std::abs(C[m * W.N + n] - exact) <= bound)) ++bad;
        }
    CHECK(bad == 0);
}

}  // namespace moe::test
