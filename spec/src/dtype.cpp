#include "moe/spec/dtype.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace moe {

std::string_view dtype_name(DType t) {
    switch (t) {
        case DType::f64: return "f64";
        case DType::f32: return "f32";
        case DType::f16: return "f16";
        case DType::bf16: return "bf16";
        case DType::i32: return "i32";
        case DType::i64: return "i64";
    }
    return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
    for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64})
        if (dtype_name(t) == name) return t;
    return std::nullopt;
}

std::size_t dtype_size(DType t) {
    switch (t) {
        case DType::f64: case DType::i64: return 8;
        case DType::f32: case DType::i32: return 4;
        case DType::f16: case DType::bf16: return 2;
    }
    return 0;
}

bool is_floating(DType t) { return t != DType::i32 && t != DType::i64; }

double unit_roundoff(DType t) {
    switch (t) {
        case DType::f64: return std::ldexp(1.0, -53);
        case DType::f32: return std::ldexp(1.0, -24);
        case DType::f16: return std::ldexp(1.0, -11);
        case DType::bf16: return std::ldexp(1.0, -8);
        default: throw std::logic_error("unit_roundoff of an integer type");
    }
}

namespace {
double decode_f16(std::uint16_t bits) {
    const int sign = bits >> 15;
    const int exp = (bits >> 10) & 0x1f;
    const int mant = bits & 0x3ff;
    double v;
    if (exp == 0) v = std::ldexp(static_cast<double>(mant), -24);  // zero or subnormal
    else if (exp == 31) v = mant ? std::numeric_limits<double>::quiet_NaN()
                                 : std::numeric_limits<double>::infinity();
    else v = std::ldexp(static_cast<double>(mant | 0x400), exp - 25);
    return sign ? -v : v;
}
}  // namespace

double f16_bits_to_f64(std::uint16_t bits) {
    // A table: large f16 tensors (model weights) are widened element by element.
    static const std::vector<double> table = [] {
        std::vector<double> t(65536);
        for (std::uint32_t b = 0; b < 65536; ++b) t[b] = decode_f16(static_cast<std::uint16_t>(b));
        return t;
    }();
    return table[bits];
}

double bf16_bits_to_f64(std::uint16_t bits) {
    const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &wide, sizeof f);
    return static_cast<double>(f);
}

namespace {

// Rounds |v| (finite, non-negative) to a binary format with `mant_bits` stored significand bits,
// minimum normal exponent `emin` and maximum finite value `max_finite`; returns the f64 value.
double round_binary(double a, int mant_bits, int emin, double max_finite) {
    if (a == 0.0) return 0.0;
    int e;
    std::frexp(a, &e);          // a = m * 2^e, m in [0.5, 1)
    int exp = e - 1;            // a in [2^exp, 2^(exp+1))
    if (exp < emin) exp = emin;  // subnormal range: fixed quantum
    const double quantum = std::ldexp(1.0, exp - mant_bits);
    // a / quantum is exact (power-of-two scaling); nearbyint rounds ties to even under the
    // default rounding mode.
    const double r = std::nearbyint(a / quantum) * quantum;
    const double overflow_edge = max_finite + std::ldexp(1.0, std::ilogb(max_finite) - mant_bits - 1);
    if (a >= overflow_edge) return std::numeric_limits<double>::infinity();
    return r > max_finite ? max_finite : r;
}

}  // namespace

std::uint16_t f64_to_f16_bits(double v) {
    const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
    if (std::isnan(v)) return 0x7e00;
    const double r = round_binary(std::fabs(v), 10, -14, 65504.0);
    if (std::isinf(r)) return sign | 0x7c00;
    if (r == 0.0) return sign;
    int e;
    std::frexp(r, &e);
    int exp = e - 1;
    if (exp < -14) {  // subnormal
        return sign | static_cast<std::uint16_t>(std::ldexp(r, 24));
    }
    const auto mant = static_cast<std::uint16_t>(std::ldexp(r, 10 - exp) - 1024.0);
    return sign | static_cast<std::uint16_t>((exp + 15) << 10) | mant;
}

std::uint16_t f64_to_bf16_bits(double v) {
    const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
    if (std::isnan(v)) return 0x7fc0;
    const double max_bf16 = std::ldexp(255.0, 120);  // (2 - 2^-7) * 2^127
    const double r = round_binary(std::fabs(v), 7, -126, max_bf16);
    // r is exactly representable in bf16, hence in f32: its top 16 bits are the pattern.
    const float f = static_cast<float>(r);
    std::uint32_t wide;
    std::memcpy(&wide, &f, sizeof wide);
    return sign | static_cast<std::uint16_t>(wide >> 16);
}

double round_to(DType t, double v) {
    switch (t) {
        case DType::f64: return v;
        case DType::f32: return static_cast<double>(static_cast<float>(v));
        case DType::f16: return f16_bits_to_f64(f64_to_f16_bits(v));
        case DType::bf16: return bf16_bits_to_f64(f64_to_bf16_bits(v));
        default: throw std::logic_error("round_to an integer type");
    }
}

}  // namespace moe
