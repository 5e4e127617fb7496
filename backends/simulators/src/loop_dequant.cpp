#include "loop_dequant.hpp"

#include "moe/spec/dtype.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace moe::backends {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// The stored byte of element `flat`: a whole byte, or a nibble (low first, unless swapped).
unsigned raw_code(const Tensor& t, std::size_t flat, bool swap_nibbles) {
    if (t.dtype() != DType::u4 && t.dtype() != DType::i4 && t.dtype() != DType::f4e2m1) return t.data()[flat];
    const unsigned byte = t.data()[flat / 2];
    const bool high = (flat % 2 == 1) != swap_nibbles;
    return high ? byte >> 4 : byte & 0x0fu;
}

double e2m1(unsigned c) {
    static const double magnitude[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
    return (c & 8u) ? -magnitude[c & 7u] : magnitude[c & 7u];
}

double e4m3(unsigned c, DequantBug bug) {
    const unsigned e = (c >> 3) & 15u, m = c & 7u;
    if (e == 15 && m == 7 && bug != DequantBug::e4m3_nan && !(bug == DequantBug::e4m3_negative_nan && (c & 0x80u)))
        return kNaN;
    if (e == 0 && bug == DequantBug::fp8_subnormals) return 0.0;
    const double v = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, static_cast<int>(e) - 7);
    return (c & 0x80u) ? -v : v;
}

double e5m2(unsigned c, DequantBug bug) {
    const unsigned e = (c >> 2) & 31u, m = c & 3u;
    if (e == 0 && bug == DequantBug::fp8_subnormals) return 0.0;
    double v;
    if (e == 31 && bug == DequantBug::e5m2_inf && m == 0) v = 57344.0;
    else if (e == 31 && bug == DequantBug::e5m2_nan) v = std::numeric_limits<double>::infinity();
    else if (e == 31) v = m ? kNaN : std::numeric_limits<double>::infinity();
    else v = e == 0 ? std::ldexp(m / 4.0, -14) : std::ldexp(1.0 + m / 4.0, static_cast<int>(e) - 15);
    return (c & 0x80u) ? -v : v;
}

// The value a code of the weight's (or zero point's) type stands for.
double code_value(DType t, unsigned c, DequantBug bug) {
    switch (t) {
        case DType::u8: case DType::u4: return static_cast<double>(c);
        case DType::i8: return static_cast<double>(static_cast<std::int8_t>(c));
        case DType::i4: return c >= 8 ? static_cast<double>(c) - 16.0 : static_cast<double>(c);
        case DType::f4e2m1: return e2m1(c);
        case DType::f8e4m3: return e4m3(c, bug);
        case DType::f8e5m2: return e5m2(c, bug);
        default: return kNaN;
    }
}

// A scale or zero point element: the float types through their ordinary widening, E8M0 here.
double param_value(const Tensor& t, std::size_t flat, DequantBug bug) {
    // A u4 kernel that loads its zero points with a signed nibble extract: codes 8..15 turn negative.
    if (t.dtype() == DType::u4 && bug == DequantBug::u4_zero_point_signed)
        return code_value(DType::i4, raw_code(t, flat, false), bug);
    if (t.dtype() == DType::f8e8m0) {
        const unsigned c = t.data()[flat];
        if (c == 0 && bug == DequantBug::e8m0_zero) return 0.0;
        return c == 0xffu ? kNaN : std::ldexp(1.0, static_cast<int>(c) - (bug == DequantBug::e8m0_bias ? 126 : 127));
    }
    if (t.dtype() == DType::f32 || t.dtype() == DType::f16 || t.dtype() == DType::bf16) return t.get(flat);
    return code_value(t.dtype(), raw_code(t, flat, bug == DequantBug::nibble_order), bug);
}

}  // namespace

void loop_dequantize_expert(const Problem& p, const std::string& weight, std::size_t e, DType dequant, DequantBug bug,
                            float* out) {
    const Tensor& w = p.input(weight);
    const Tensor& s = p.input(weight + "_scale");
    const std::string zp_name = weight + "_zero_point";
    const Tensor* z = p.has(zp_name) ? &p.input(zp_name) : nullptr;
    const std::size_t N = w.shape()[1], K = w.shape()[2];
    const std::size_t rows = s.shape()[1], G = s.shape()[2];
    std::size_t gs = K / G;
    // One group size for the layer, weight_0's (K0 / G0), as a kernel that reads it once: where
    // the weights agree (every bundled case but the mixed ones) it is the right one.
    if (bug == DequantBug::weight_0_group_size && p.has("weight_0_scale"))
        gs = p.input("weight_0").shape()[2] / p.input("weight_0_scale").shape()[2];
    // A u4 kernel written for f16 scales only: it indexes the scale's bytes as an array of halves.
    const bool scales_as_f16 = bug == DequantBug::u4_scales_as_f16 && w.dtype() == DType::u4 && s.dtype() != DType::f16;
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t k = 0; k < K; ++k) {
            std::size_t g = std::min(k / gs, G - 1);  // the min matters only to the weight_0_group_size bug
            if (bug == DequantBug::next_group_scale) g = (g + 1) % G;
            if (bug == DequantBug::first_group_scale) g = 0;
            // One scale row taken to mean one scale per matrix, as a kernel that tests rows == 1 alone.
            if (bug == DequantBug::row_scale_per_tensor && rows == 1) g = 0;
            const std::size_t param = (e * rows + (rows == 1 ? 0 : n)) * G + g;
            const std::size_t flat = (e * N + n) * K + k;
            const double q = code_value(w.dtype(), raw_code(w, flat, bug == DequantBug::nibble_order), bug);
            const double zero = z ? param_value(*z, param, bug) : 0.0;
            // Exact in f64 (spec/compressed.md, section 1), then one rounding to `dequant`.
            const bool unscaled = bug == DequantBug::odd_last_scale && G > 1 && G % 2 == 1 && g == G - 1;
            double scale = unscaled ? 1.0 : param_value(s, param, bug);
            if (scales_as_f16) {
                const std::uint8_t* b = s.data() + 2 * param;  // little-endian, as the tensor stores it
                scale = f16_bits_to_f64(static_cast<std::uint16_t>(b[0] | b[1] << 8));
            }
            const double wf = (bug == DequantBug::zero_point_sign ? q + zero : q - zero) * scale;
            out[n * K + k] = static_cast<float>(round_to(dequant, wf));
        }
}

}  // namespace moe::backends
