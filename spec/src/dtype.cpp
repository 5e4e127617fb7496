#include "moe/spec/dtype.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "rounding.hpp"

namespace moe {

std::string_view dtype_name(DType t) {
    switch (t) {
        case DType::f64: return "f64";
        case DType::f32: return "f32";
        case DType::f16: return "f16";
        case DType::bf16: return "bf16";
        case DType::i32: return "i32";
        case DType::i64: return "i64";
        case DType::u8: return "u8";
        case DType::i8: return "i8";
        case DType::u4: return "u4";
        case DType::i4: return "i4";
        case DType::f4e2m1: return "f4e2m1";
        case DType::f8e4m3: return "f8e4m3";
        case DType::f8e5m2: return "f8e5m2";
        case DType::f8e8m0: return "f8e8m0";
    }
    return "?";
}

namespace {
constexpr DType kAllTypes[] = {DType::f64, DType::f32,    DType::f16,    DType::bf16,   DType::i32,
                               DType::i64, DType::u8,     DType::i8,     DType::u4,     DType::i4,
                               DType::f4e2m1, DType::f8e4m3, DType::f8e5m2, DType::f8e8m0};
}  // namespace

std::optional<DType> parse_dtype(std::string_view name) {
    for (DType t : kAllTypes)
        if (dtype_name(t) == name) return t;
    return std::nullopt;
}

std::size_t dtype_bits(DType t) {
    switch (t) {
        case DType::f64: case DType::i64: return 64;
        case DType::f32: case DType::i32: return 32;
        case DType::f16: case DType::bf16: return 16;
        case DType::u8: case DType::i8: case DType::f8e4m3: case DType::f8e5m2: case DType::f8e8m0: return 8;
        case DType::u4: case DType::i4: case DType::f4e2m1: return 4;
    }
    return 0;
}

std::size_t dtype_size(DType t) { return dtype_bits(t) < 8 ? 1 : dtype_bits(t) / 8; }

std::size_t storage_bytes(DType t, std::size_t count) {
    return dtype_bits(t) == 4 ? count / 2 + count % 2 : count * dtype_size(t);
}

bool is_floating(DType t) { return t == DType::f64 || t == DType::f32 || t == DType::f16 || t == DType::bf16; }

bool is_index_type(DType t) { return t == DType::i32 || t == DType::i64; }

bool is_integer_weight(DType t) { return t == DType::u8 || t == DType::i8 || t == DType::u4 || t == DType::i4; }

bool is_compressed_weight(DType t) {
    return is_integer_weight(t) || t == DType::f4e2m1 || t == DType::f8e4m3 || t == DType::f8e5m2;
}

bool is_scale_type(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f8e8m0; }

std::int64_t integer_min(DType t) {
    switch (t) {
        case DType::i8: return -128;
        case DType::i4: return -8;
        case DType::u8: case DType::u4: return 0;
        default: throw std::logic_error("integer_min of a type that is not an integer weight type");
    }
}

std::int64_t integer_max(DType t) {
    switch (t) {
        case DType::u8: return 255;
        case DType::i8: return 127;
        case DType::u4: return 15;
        case DType::i4: return 7;
        default: throw std::logic_error("integer_max of a type that is not an integer weight type");
    }
}

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


std::uint16_t f64_to_f16_bits(double v) {
    const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
    if (std::isnan(v)) return 0x7e00;
    const double r = detail::round_binary(std::fabs(v), 10, -14, 65504.0);
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
    const double r = detail::round_binary(std::fabs(v), 7, -126, max_bf16);
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
        case DType::f8e4m3: return f8e4m3_to_f64(f64_to_f8e4m3(v));
        case DType::f8e5m2: return f8e5m2_to_f64(f64_to_f8e5m2(v));
        case DType::f4e2m1: return f4e2m1_to_f64(f64_to_f4e2m1(v));
        default: throw std::logic_error("round_to an integer type");
    }
}

}  // namespace moe
