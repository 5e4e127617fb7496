// The cpu backend's fast f32 <-> f16/bf16 row conversions give the spec's bits (spec/dtype.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "element_convert.hpp"
#include "moe/spec/dtype.hpp"

using namespace moe;
using namespace moe::backends::cpu;

namespace {

float from_bits(std::uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

std::uint16_t bits16(const Tensor& t, std::size_t i) {
    std::uint16_t h;
    std::memcpy(&h, t.data() + 2 * i, 2);
    return h;
}

// f32 values that exercise rounding: every exponent, ties, values just around the f16/bf16
// overflow and subnormal thresholds, signed zeros, infinities, NaN; 16 411 values so that the
// vector loop and its scalar tail both run.
std::vector<float> probe_values() {
    std::vector<float> v = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f, 65519.99f, 65520.0f, -65520.0f,
                            std::ldexp(1.0f, -24), std::ldexp(1.0f, -25), std::ldexp(1.5f, -25), std::ldexp(1.0f, -14),
                            1.0f + std::ldexp(1.0f, -11), 1.0f + std::ldexp(3.0f, -11), 3.3895314e38f};
    std::uint32_t s = 12345;
    while (v.size() < 16411) {
        s = s * 1664525u + 1013904223u;
        v.push_back(from_bits(s));
    }
    return v;
}

}  // namespace

TEST_CASE("narrow_from_f32 rounds to f16 and bf16 exactly as the spec's conversion") {
    const std::vector<float> in = probe_values();
    for (DType t : {DType::f16, DType::bf16}) {
        CAPTURE(dtype_name(t));
        Tensor out(t, {in.size() + 3});
        narrow_from_f32(in.data(), in.size(), out, 3);  // at an offset
        std::size_t mismatches = 0;
        for (std::size_t i = 0; i < in.size(); ++i) {
            const std::uint16_t got = bits16(out, i + 3);
            if (std::isnan(in[i])) {
                CHECK(std::isnan(t == DType::f16 ? f16_bits_to_f64(got) : bf16_bits_to_f64(got)));
                continue;
            }
            const std::uint16_t want = t == DType::f16 ? f64_to_f16_bits(in[i]) : f64_to_bf16_bits(in[i]);
            if (got != want) ++mismatches;
        }
        CHECK(mismatches == 0);
    }
}

TEST_CASE("widen_to_f32 is exact for every f16 and bf16 bit pattern") {
    for (DType t : {DType::f16, DType::bf16}) {
        CAPTURE(dtype_name(t));
        Tensor in(t, {65536});
        for (std::uint32_t b = 0; b < 65536; ++b) {
            const auto h = static_cast<std::uint16_t>(b);
            std::memcpy(in.data() + 2 * b, &h, 2);
        }
        std::vector<float> out(65536 - 5);
        widen_to_f32(in, 5, out.size(), out.data());
        std::size_t mismatches = 0;
        for (std::size_t i = 0; i < out.size(); ++i) {
            const double want = in.get(i + 5);
            if (std::isnan(want) ? !std::isnan(out[i]) : static_cast<double>(out[i]) != want) ++mismatches;
        }
        CHECK(mismatches == 0);
    }
}

TEST_CASE("f32 rows round-trip unchanged and f64 rows round to nearest") {
    const std::vector<float> in = probe_values();
    Tensor t(DType::f32, {in.size()});
    narrow_from_f32(in.data(), in.size(), t, 0);
    std::vector<float> back(in.size());
    widen_to_f32(t, 0, in.size(), back.data());
    CHECK(std::memcmp(back.data(), in.data(), in.size() * 4) == 0);
    Tensor d(DType::f64, {2});
    d.set(0, 1.0 + std::ldexp(1.0, -30));
    d.set(1, -3.0);
    float two[2];
    widen_to_f32(d, 0, 2, two);
    CHECK(two[0] == 1.0f);
    CHECK(two[1] == -3.0f);
}
