#pragma once
// Where the library's bf16 x bf16 matmul computes what an f32 chain computes. It runs on
// vdpbf16ps, which treats subnormal inputs and results as zero (DAZ, FTZ): a bf16 weight of 2^-130
// against an activation of 2^100 then contributes nothing, where the product, 2^-30, is an
// ordinary f32 number (the selftest mutant subnormal_gemm_weights_flushed; the bundled case
// subnormal_gemm_weights_bf16 catches it). With every nonzero |value| of both operands at least
// 2^-50, nothing it forms is ever subnormal: the values are multiples of 2^-57 (8 significant
// bits), their products of 2^-114, and so is every partial sum, whose nonzero magnitudes are then
// at least 2^-114 > 2^-126. Other operands take the f32 path (exact widening, IEEE subnormals).
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace moe::backends::cpu {

// bf16's biased exponent of 2^-50: smaller nonzero magnitudes (subnormals included) are outside.
inline constexpr unsigned kBf16MatmulMinExponent = 127 - 50;

inline bool bf16_matmul_operand(std::uint16_t bits) {
    const unsigned exponent = (bits >> 7) & 0xFFu;
    return (bits & 0x7FFFu) == 0 || exponent >= kBf16MatmulMinExponent;
}

// `count` bf16 values (as stored: 2 bytes each, any alignment).
inline bool bf16_matmul_operands(const unsigned char* bf16, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
        std::uint16_t b;
        std::memcpy(&b, bf16 + 2 * i, 2);
        if (!bf16_matmul_operand(b)) return false;
    }
    return true;
}

// M rows of K f32 values (bf16 values held as f32: their high halves).
inline bool bf16_matmul_rows(const float* A, std::size_t M, std::size_t lda, std::size_t K) {
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t k = 0; k < K; ++k) {
            std::uint32_t b;
            std::memcpy(&b, A + m * lda + k, 4);
            if (!bf16_matmul_operand(static_cast<std::uint16_t>(b >> 16))) return false;
        }
    return true;
}

}  // namespace moe::backends::cpu
