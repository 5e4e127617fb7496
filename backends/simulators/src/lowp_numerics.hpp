#pragma once
// Narrow-format arithmetic that some loop variants (and their mutants) use instead of the exact
// round-to-nearest-even of moe::round_to: truncation toward zero, TF32 inputs, and the subnormal
// test a flush-to-zero unit applies. Written from the formats' definitions, independently of the
// reference.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "moe/spec/dtype.hpp"

namespace moe::backends::lowp {

// Significand bits (with the implicit one) and smallest normal exponent of a floating type.
inline int significand_bits(DType t) {
    switch (t) {
        case DType::f64: return 53;
        case DType::f16: return 11;
        case DType::bf16: return 8;
        default: return 24;
    }
}
inline int min_normal_exponent(DType t) {
    switch (t) {
        case DType::f64: return -1022;
        case DType::f16: return -14;
        default: return -126;  // f32 and bf16 share the exponent range
    }
}

// v truncated toward zero to a value of type t: what a conversion that drops the low bits does
// instead of rounding. Finite values within t's range only (the cases keep them there).
inline double truncate_to(DType t, double v) {
    if (v == 0.0 || !std::isfinite(v)) return v;
    int e;
    std::frexp(std::fabs(v), &e);  // |v| in [2^(e-1), 2^e)
    const int exponent = std::max(e - 1, min_normal_exponent(t));
    const double quantum = std::ldexp(1.0, exponent - (significand_bits(t) - 1));
    return std::copysign(std::floor(std::fabs(v) / quantum) * quantum, v);
}

// v with its significand rounded to TF32's 10 stored bits (11 with the implicit one), to
// nearest, ties to even: the input conversion of a GEMM unit running in TF32 mode.
inline float to_tf32(float v) {
    if (!std::isfinite(v)) return v;
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    u += 0x0FFFu + ((u >> 13) & 1u);
    u &= ~0x1FFFu;
    float r;
    std::memcpy(&r, &u, 4);
    return r;
}

// Whether a value of type t is subnormal there (non-zero, below the smallest normal).
inline bool is_subnormal_in(DType t, double v) {
    return v != 0.0 && std::fabs(v) < std::ldexp(1.0, min_normal_exponent(t));
}

}  // namespace moe::backends::lowp
