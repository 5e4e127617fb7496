// Conversions between the storage types and f64: exact widening, round-to-nearest-even narrowing.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "moe/spec/dtype.hpp"
#include "moe/spec/tensor.hpp"

using namespace moe;

TEST_CASE("f16: every pattern widens and narrows back to itself") {
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        const auto bits = static_cast<std::uint16_t>(b);
        const double v = f16_bits_to_f64(bits);
        if (std::isnan(v)) {
            CHECK(std::isnan(f16_bits_to_f64(f64_to_f16_bits(v))));
            continue;
        }
        REQUIRE(f64_to_f16_bits(v) == bits);
    }
}

TEST_CASE("bf16: every pattern widens and narrows back to itself") {
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        const auto bits = static_cast<std::uint16_t>(b);
        const double v = bf16_bits_to_f64(bits);
        if (std::isnan(v)) continue;
        REQUIRE(f64_to_bf16_bits(v) == bits);
    }
}

TEST_CASE("f16 known values and rounding") {
    CHECK(f16_bits_to_f64(0x3c00) == 1.0);
    CHECK(f16_bits_to_f64(0x7bff) == 65504.0);
    CHECK(f16_bits_to_f64(0x0001) == std::ldexp(1.0, -24));
    CHECK(f16_bits_to_f64(0xc000) == -2.0);
    // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even -> 1.
    CHECK(f64_to_f16_bits(1.0 + std::ldexp(1.0, -11)) == 0x3c00);
    // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: ties to even -> 1 + 2^-9.
    CHECK(f64_to_f16_bits(1.0 + 3 * std::ldexp(1.0, -11)) == 0x3c02);
    CHECK(f64_to_f16_bits(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30)) == 0x3c01);
    CHECK(f64_to_f16_bits(65519.0) == 0x7bff);  // below the overflow midpoint
    CHECK(f64_to_f16_bits(65520.0) == 0x7c00);  // midpoint ties to even: infinity
    CHECK(f64_to_f16_bits(-1e9) == 0xfc00);
    CHECK(f64_to_f16_bits(std::ldexp(1.0, -25)) == 0x0000);        // half the smallest subnormal: to even (0)
    CHECK(f64_to_f16_bits(std::ldexp(3.0, -26)) == 0x0001);        // 0.75 of it: up
    CHECK(f64_to_f16_bits(-0.0) == 0x8000);
}

TEST_CASE("bf16 matches f32 truncation semantics with RNE") {
    CHECK(f64_to_bf16_bits(1.0) == 0x3f80);
    CHECK(bf16_bits_to_f64(0x3f81) == 1.0 + std::ldexp(1.0, -7));
    CHECK(f64_to_bf16_bits(1.0 + std::ldexp(1.0, -8)) == 0x3f80);          // tie -> even
    CHECK(f64_to_bf16_bits(1.0 + 3 * std::ldexp(1.0, -8)) == 0x3f82);      // tie -> even
    CHECK(f64_to_bf16_bits(std::numeric_limits<double>::infinity()) == 0x7f80);
    CHECK(f64_to_bf16_bits(1e39) == 0x7f80);  // beyond bf16 range
}

TEST_CASE("round_to agrees with the hardware for f32") {
    for (double v : {0.1, -3.3, 1e-40, 3.4e38, 1.0 / 3.0})
        CHECK(round_to(DType::f32, v) == static_cast<double>(static_cast<float>(v)));
    CHECK(unit_roundoff(DType::f16) == std::ldexp(1.0, -11));
    CHECK(unit_roundoff(DType::bf16) == std::ldexp(1.0, -8));
}

TEST_CASE("Tensor keeps the element type and round-trips values") {
    Tensor t(DType::bf16, {2, 3});
    CHECK(t.nbytes() == 12);
    t.set(4, 1.0 / 3.0);
    CHECK(t.get(4) == round_to(DType::bf16, 1.0 / 3.0));
    Tensor i(DType::i64, {3});
    i.set_index(2, -5);
    CHECK(i.get_index(2) == -5);
    CHECK(i.get(2) == -5.0);
    CHECK_THROWS(i.set(0, 0.5));
    CHECK_THROWS(element_count({std::size_t(1) << 40, std::size_t(1) << 40}));
}
