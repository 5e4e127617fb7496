#pragma once
// White-box helpers for the compressed decode kernels' tests (test_cpu_compressed.cpp,
// test_cpu_int_dot.cpp): random 4-bit weights with their scales and zero points, rows of bf16
// activations, and the check of a product against the f64 one within the f32 chain's bound.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
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

// The dot kernels' weight forms: every 4-bit type; zero points none, in the weight's type or f16;
// groups of 32 to 256; scales and zero points per row or one row shared by all.
struct DotCase {
    DType t;
    bool zp;
    DType zero_type;
    std::size_t gs;
    bool shared = false;
};

inline const std::vector<DotCase>& dot_cases() {
    static const std::vector<DotCase> cases = {
        {DType::u4, false, DType::u4, 32},  {DType::u4, true, DType::u4, 32},    {DType::u4, true, DType::f16, 32},
        {DType::u4, true, DType::u4, 64},   {DType::u4, false, DType::u4, 128},  {DType::i4, false, DType::i4, 32},
        {DType::i4, true, DType::i4, 32},   {DType::i4, true, DType::i4, 96},    {DType::f4e2m1, false, DType::u4, 32},
        {DType::u4, true, DType::u4, 128},  {DType::i4, true, DType::i4, 256},   {DType::u4, true, DType::f16, 128},
        {DType::i4, true, DType::f16, 32},  {DType::i4, true, DType::f16, 128},  {DType::u4, true, DType::u4, 32, true},
        {DType::i4, true, DType::i4, 64, true},
    };
    return cases;
}

// body(W, N, K, M) for every dot case, every K of ks its group size divides and M = 1, 2, 5, 8:
// random weights of N rows (expert 1 of 2), the case in doctest's messages.
template <class Body>
void for_each_dot_case(std::initializer_list<std::size_t> ks, std::size_t N, std::mt19937& rng, Body body) {
    for (const DotCase& c : dot_cases())
        for (std::size_t K : ks) {
            if (K % c.gs) continue;
            const Weights w = random_weights(c.t, 2, N, K, c.gs, c.zero_type, rng, c.shared);
            const WeightView W = w.view(1, c.zp);
            for (std::size_t M : {std::size_t{1}, std::size_t{2}, std::size_t{5}, std::size_t{8}}) {
                CAPTURE(dtype_name(c.t));
                CAPTURE(c.zp);
                CAPTURE(dtype_name(c.zero_type));
                CAPTURE(c.gs);
                CAPTURE(c.shared);
                CAPTURE(K);
                CAPTURE(M);
                body(W, N, K, M);
            }
        }
}

}  // namespace moe::test
