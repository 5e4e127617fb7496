// White-box: the cpu backend's int8 dot-product kernels (AVX512_VNNI) for 4-bit weights
// (compressed_dot_kernels.cpp) and the activations' grid they take (int_dot_activations.hpp):
// the arrangement's digits, biases and units against the values, its refusals (off the grid,
// outside the units' range, infinities and NaN), and the kernels against the f64 product for every
// 4-bit type, zero-point form and group size, 1 to 8 rows of A, with their fallback to the bf16
// kernels off the grid.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "compressed_dot_kernels.hpp"
#include "compressed_kernels.hpp"
#include "compressed_weights_support.hpp"
#include "cpu_features.hpp"
#include "element_convert.hpp"
#include "int_dot_activations.hpp"

using namespace moe;
using namespace moe::backends::cpu;
using moe::backends::DecodeProducts;
using moe::test::check_against_f64;

namespace {

float bf16(double v) {
    return static_cast<float>(bf16_bits_to_f64(f32_to_bf16_bits(static_cast<float>(v))));
}

// M rows of bf16 values on the int8 kernels' grid: every 32-element block spans at most 13
// binades (magnitudes 2^-6 .. 2^7 times 8-bit significands), then scaled by its own power of two
// (2^-60 .. 2^60, the same in every row); zeros and negative zeros too.
std::vector<float> grid_rows(std::size_t M, std::size_t K, std::mt19937& rng) {
    std::vector<float> a(M * K);
    std::vector<int> block_scale(K / 32);
    for (int& s : block_scale) s = static_cast<int>(rng() % 121) - 60;
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t k = 0; k < K; ++k) {
            const unsigned pick = rng() % 16;
            const double significand = 1.0 + static_cast<double>(rng() % 128) / 128.0;
            double v = std::ldexp(significand, static_cast<int>(rng() % 13) - 6) * ((rng() & 1u) ? -1.0 : 1.0);
            if (pick == 0) v = 0.0;
            if (pick == 1) v = -0.0;
            a[m * K + k] = bf16(std::ldexp(v, block_scale[k / 32]));
        }
    return a;
}

// X of element k of row m from the arrangement: its digits, where the chunk keeps them.
std::int64_t arranged_integer(const IntActivations& x, std::size_t m, std::size_t k) {
    const IntChunk& ch = x.rows[m * x.chunks + k / 128];
    const std::size_t r = k % 128;
    std::int64_t X = 0;
    for (int d = 2; d >= 0; --d) X = X * 256 + ch.digits[d][r % 2][r / 2];
    return X;
}

}  // namespace

TEST_CASE("int8 dot kernels: the arrangement holds every value as digits times its block's unit, and the biases") {
    if (!cpu_has_avx512()) return;  // arrange_int's instructions (AVX-512 F, BW, VL)
    std::mt19937 rng(20261128);
    for (std::size_t K : {std::size_t{96}, std::size_t{384}, std::size_t{2880}})
        for (std::size_t M : {std::size_t{1}, std::size_t{3}, std::size_t{8}}) {
            CAPTURE(K);
            CAPTURE(M);
            const std::vector<float> A = grid_rows(M, K, rng);
            for (double code_scale : {1.0, 0.5}) {
                IntActivations x;
                REQUIRE(arrange_int(A.data(), M, K, K, code_scale, x));
                CHECK(x.chunks == (K + 127) / 128);
                std::size_t wrong_value = 0, wrong_bias = 0, digit_out_of_range = 0;
                for (std::size_t b = 0; b < K / 32; ++b) {
                    const double unit = x.block_units[b] / code_scale;
                    CHECK(x.lane_units[4 * b] == x.block_units[b]);
                    CHECK(x.lane_units[4 * b + 3] == x.block_units[b]);
                    for (std::size_t m = 0; m < M; ++m)
                        for (std::size_t j = 0; j < 32; ++j) {
                            const std::size_t k = 32 * b + j;
                            const std::int64_t X = arranged_integer(x, m, k);
                            if (static_cast<double>(X) * unit != static_cast<double>(A[m * K + k])) ++wrong_value;
                            if (std::abs(X) >= (std::int64_t{1} << kIntDigitsBits)) ++digit_out_of_range;
                        }
                }
                for (std::size_t m = 0; m < M; ++m)
                    for (std::size_t k0 = 0; k0 < K; k0 += 8) {
                        std::int64_t sum = 0;
                        for (std::size_t k = k0; k < k0 + 8; ++k) sum += arranged_integer(x, m, k);
                        if (x.rows[m * x.chunks + k0 / 128].bias[k0 % 128 / 8] != -16 * sum) ++wrong_bias;
                    }
                CHECK(wrong_value == 0);
                CHECK(wrong_bias == 0);
                CHECK(digit_out_of_range == 0);
            }
        }
}

TEST_CASE("int8 dot kernels: the arrangement refuses values off the grid, outside the units' range, infinite or NaN") {
    if (!cpu_has_avx512()) return;  // arrange_int's instructions (AVX-512 F, BW, VL)
    const std::size_t K = 64;
    std::vector<float> a(K, 1.0f);
    IntActivations x;
    REQUIRE(arrange_int(a.data(), 1, K, K, 1.0, x));
    // 15 binades below the block's largest (1.5 in [2^0, 2^1): unit 2^-21): on the grid; 2^-22 is not.
    a[3] = 1.5f;
    a[5] = std::ldexp(1.0f, -21);
    CHECK(arrange_int(a.data(), 1, K, K, 1.0, x));
    a[5] = std::ldexp(1.0f, -22);
    CHECK_FALSE(arrange_int(a.data(), 1, K, K, 1.0, x));
    // ... but only its own block's largest counts: the next block (from element 32) is on its own grid.
    a[5] = 1.0f;
    a[40] = std::ldexp(1.0f, -60);
    for (std::size_t k = 32; k < K; ++k) a[k] = k == 40 ? a[k] : std::ldexp(1.0f, -50);
    CHECK(arrange_int(a.data(), 1, K, K, 1.0, x));
    CHECK(x.block_units[1] == std::ldexp(1.0f, -71));  // largest 2^-50 in [2^-50, 2^-49): E = -49
    // A second row shares each block's grid: its largest sets the unit for both.
    std::vector<float> two(2 * K, 1.0f);
    two[K + 1] = 4096.0f;  // unit 2^-9 for block 0: 1.0 stays on it, 2^-9 too, 2^-10 not
    two[2] = std::ldexp(1.0f, -9);
    CHECK(arrange_int(two.data(), 2, K, K, 1.0, x));
    two[2] = std::ldexp(1.0f, -10);
    CHECK_FALSE(arrange_int(two.data(), 2, K, K, 1.0, x));
    // Units outside [2^-100, 2^100]: largest below 2^-78, or at 2^122 and above.
    std::vector<float> b(K, std::ldexp(1.0f, 121));
    CHECK(arrange_int(b.data(), 1, K, K, 1.0, x));
    b[0] = std::ldexp(1.0f, 122);
    CHECK_FALSE(arrange_int(b.data(), 1, K, K, 1.0, x));
    for (float& v : b) v = std::ldexp(1.0f, -79);
    CHECK(arrange_int(b.data(), 1, K, K, 1.0, x));
    for (float& v : b) v = std::ldexp(1.0f, -80);
    CHECK_FALSE(arrange_int(b.data(), 1, K, K, 1.0, x));
    for (float& v : b) v = std::numeric_limits<float>::denorm_min();
    CHECK_FALSE(arrange_int(b.data(), 1, K, K, 1.0, x));
    // Zeros alone: on the grid (unit 1).
    for (float& v : b) v = 0.0f;
    b[7] = -0.0f;
    CHECK(arrange_int(b.data(), 1, K, K, 1.0, x));
    CHECK(x.block_units[0] == 1.0f);
    // Infinities and NaN: refused wherever they are.
    for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::quiet_NaN()}) {
        std::vector<float> c(K, 1.0f);
        c[K - 1] = bad;
        CHECK_FALSE(arrange_int(c.data(), 1, K, K, 1.0, x));
    }
}

TEST_CASE("int8 dot kernels against the f64 product, every 4-bit type and zero-point form, and their fallback") {
    std::mt19937 rng(20261129);
    std::size_t int_calls = 0;
    // K: a row's last step (M = 1) of 1 to 4 chunks, whole or ending in a partial one (544: a
    // partial one alone; 640: one; 768: two; 384: three; 1184: one and a partial; 2880: two and a
    // partial; 480: three and a partial); 480 and 1184 have an odd number of groups of 32, so every
    // other row's zero points start at an odd nibble.
    moe::test::for_each_dot_case(
        {384, 480, 544, 640, 768, 1184, 2880}, 40, rng, [&](const WeightView& W, std::size_t N, std::size_t K, std::size_t M) {
            std::vector<float> A = grid_rows(M, K, rng), C1(M * N), C2(M * N);
            // Asked for, the int8 kernels take every call on the grid where the CPU has them;
            // automatic, where the processor is one they are chosen on; bf16, never.
            const bool on_grid = compressed_uses_int_dot(A.data(), M, K, W, DecodeProducts::int8);
            CHECK(on_grid == cpu_has_int_dot());
            CHECK(compressed_uses_int_dot(A.data(), M, K, W) == cpu_prefers_int_dot());
            CHECK_FALSE(compressed_uses_int_dot(A.data(), M, K, W, DecodeProducts::bf16));
            int_calls += on_grid;
            compressed_gemm(A.data(), M, K, W, N, C1.data(), N, 1, DecodeProducts::int8);
            check_against_f64(A, M, W, C1);
            compressed_gemm(A.data(), M, K, W, N, C2.data(), N, 2, DecodeProducts::int8);
            CHECK(C1 == C2);  // threads
            // One element 2^-30 times its block's largest, with an 8-bit significand: its
            // lowest bit lies far below the block's unit, so the bf16 kernels take the call,
            // still within the bound.
            const std::size_t k_off = K / 3, block = k_off / 32 * 32;
            double largest = 0.0;
            for (std::size_t m = 0; m < M; ++m)
                for (std::size_t k = block; k < block + 32; ++k) largest = std::max(largest, double(std::abs(A[m * K + k])));
            A[(M - 1) * K + k_off] = bf16(largest * std::ldexp(1.0 + 1.0 / 128, -30));
            CHECK_FALSE(compressed_uses_int_dot(A.data(), M, K, W, DecodeProducts::int8));
            CHECK(compressed_uses_bf16_dot(A.data(), M, K, W) == cpu_has_avx512_bf16());
            compressed_gemm(A.data(), M, K, W, N, C1.data(), N, 1, DecodeProducts::int8);
            check_against_f64(A, M, W, C1);
        });
    if (cpu_has_int_dot()) CHECK(int_calls > 0);
}
