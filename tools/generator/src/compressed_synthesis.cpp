#include "moe/generator/compressed_synthesis.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

#include "moe/generator/random_stream.hpp"
#include "moe/spec/compression.hpp"
#include "moe/spec/error.hpp"

namespace moe::generator {

namespace {

// Exact cases draw integer codes (and zero points) from a window of 8 values, so that |W - Z| <= 7
// (3 bits): the certificate (spec/README.md section 12) must fit every sum in f32's 24 bits.
std::int64_t code_low(DType t, bool exact) { return exact ? (t == DType::u8 || t == DType::u4 ? 0 : -4) : integer_min(t); }
std::int64_t code_high(DType t, bool exact) { return exact ? code_low(t, true) + 7 : integer_max(t); }

// FP8 "bottom" draws: values below 4 times the smallest normal (E4M3 2^-4, E5M2 2^-12), over four
// binades, so that about half of the codes are subnormal: a decoder that flushes them to zero
// loses half of every row, where the wide draw's subnormals hide under its large values.
double fp8_bottom_span(DType t) { return std::ldexp(1.0, t == DType::f8e4m3 ? -4 : -12); }

// The largest |W - Z| a type's codes reach in this synthesis: the dequantised values then span
// about [-magnitude, magnitude] once scaled by magnitude / span.
double code_span(DType t, bool exact, bool fp8_bottom) {
    if (exact) return t == DType::f4e2m1 ? 2.0 : 7.0;
    if (fp8_bottom) return fp8_bottom_span(t);
    switch (t) {
        case DType::u8: return 255.0;
        case DType::i8: return 128.0;
        case DType::u4: return 15.0;
        case DType::i4: return 8.0;
        case DType::f4e2m1: return 6.0;
        case DType::f8e4m3: return 448.0;
        case DType::f8e5m2: return 57344.0;
        default: return 1.0;
    }
}

// One stored code, as its element byte (integers as their two's-complement byte).
std::uint8_t draw_code(DType t, bool exact, bool fp8_bottom, RandomStream& rs) {
    if (is_integer_weight(t)) {
        const std::int64_t lo = code_low(t, exact), hi = code_high(t, exact);
        const auto v = lo + static_cast<std::int64_t>(rs.below(static_cast<std::uint64_t>(hi - lo + 1)));
        return static_cast<std::uint8_t>(static_cast<std::int8_t>(v));
    }
    if (t == DType::f4e2m1) {
        // Every code is a number; exact cases keep to |v| <= 2 (codes 0-4 and their negatives).
        if (!exact) return static_cast<std::uint8_t>(rs.below(16));
        const auto c = static_cast<std::uint8_t>(rs.below(10));
        return c < 5 ? c : static_cast<std::uint8_t>(c - 5 + 8);
    }
    // FP8: values over several binades (subnormals included) up to the largest; exact cases take
    // integers in [-7, 7], which both types hold exactly.
    double v;
    if (exact) {
        v = static_cast<double>(static_cast<std::int64_t>(rs.below(15)) - 7);
    } else if (fp8_bottom) {
        v = rs.uniform(-1.0, 1.0) * std::ldexp(fp8_bottom_span(t), -static_cast<int>(rs.below(4)));
    } else {
        const double max = t == DType::f8e4m3 ? 448.0 : 57344.0;
        v = rs.uniform(-1.0, 1.0) * std::ldexp(max, -static_cast<int>(rs.below(12)));
    }
    return t == DType::f8e4m3 ? f64_to_f8e4m3(v) : f64_to_f8e5m2(v);
}

}  // namespace

void synthesize_compressed_weight(Problem& p, const CaseSpec& c, const std::string& name, std::size_t E, std::size_t N,
                                  std::size_t K, double magnitude) {
    const CompressionSpec& cs = *c.compression;
    const std::size_t own = cs.group_size_of(name);  // the object form's size for this weight, or the number
    const std::size_t gs = own ? own : K;
    if (K % gs != 0)
        throw InputError("case " + c.name + ": " + (cs.group_sizes.count(name) ? "group_size." + name : "group_size") +
                         " " + std::to_string(gs) + " does not divide K = " + std::to_string(K) + " of " + name);
    if (dtype_bits(cs.type) == 4 && K % 2 != 0)
        throw InputError("case " + c.name + ": 4-bit weights need an even K, " + name + " has K = " + std::to_string(K));
    const std::size_t G = K / gs;
    const std::size_t rows = cs.scale_layout == CompressionSpec::ScaleLayout::E1G ? 1 : N;
    Shape param_shape{E, rows, G};
    if (cs.scale_layout == CompressionSpec::ScaleLayout::ENG1) param_shape.push_back(1);

    Tensor w(cs.type, {E, N, K});
    {
        RandomStream rs(c.seed, name);
        std::vector<std::uint8_t> codes(w.size());
        for (auto& code : codes) code = draw_code(cs.type, c.exact, cs.fp8_bottom, rs);
        w.set_element_bytes(codes.data());
    }

    Tensor s(cs.scale_dtype, param_shape);
    {
        RandomStream rs(c.seed, scale_input(name));
        const double base = magnitude / code_span(cs.type, c.exact, cs.fp8_bottom);
        const int e0 = static_cast<int>(std::lround(std::log2(base)));
        for (std::size_t i = 0; i < s.size(); ++i) {
            // Exact cases: one power of two for every group (a second exponent would cost the
            // certificate a bit in every GEMM); MXFP4 scales are powers of two anyway.
            if (c.exact) s.set(i, std::ldexp(1.0, e0));
            else if (cs.scale_dtype == DType::f8e8m0) s.set(i, std::ldexp(1.0, e0 + static_cast<int>(rs.below(3)) - 1));
            else s.set(i, base * rs.uniform(0.5, 1.5));
        }
    }
    p.inputs[name] = std::move(w);
    p.inputs[scale_input(name)] = std::move(s);

    if (cs.zero_point == CompressionSpec::ZeroPoint::none) return;
    Tensor z(cs.zero_point == CompressionSpec::ZeroPoint::f16 ? DType::f16 : cs.type, param_shape);
    RandomStream rs(c.seed, zero_point_input(name));
    const std::int64_t lo = code_low(cs.type, c.exact), hi = code_high(cs.type, c.exact);
    for (std::size_t i = 0; i < z.size(); ++i)
        z.set(i, static_cast<double>(lo + static_cast<std::int64_t>(rs.below(static_cast<std::uint64_t>(hi - lo + 1)))));
    p.inputs[zero_point_input(name)] = std::move(z);
}

}  // namespace moe::generator
