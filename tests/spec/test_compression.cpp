// Compressed weights in the spec layer: the OCP value tables, the packed 4-bit layout, the exact
// dequantisation and every rejected-input rule of spec/compressed.md.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "compressed_problem.hpp"
#include "moe/spec/compression.hpp"
#include "moe/spec/error.hpp"
#include "plain_problem.hpp"
#include "rejection.hpp"

using namespace moe;
using moe::test::CompressOptions;
using moe::test::compress_all_weights;
using moe::test::compress_weight;
using moe::test::has;
using moe::test::plain_problem;
using moe::test::rejection;

namespace {

const auto G2 = ExpertType::gemm2_bias_swiglu_clamp;
const auto G3 = ExpertType::gemm3_swiglu;


Problem compressed(DType type, std::size_t gs = 0, bool zp = false, ExpertType t = G3) {
    Problem p = plain_problem(t, Convention::openvino, 5, 64, 32, 4, 2);
    CompressOptions o;
    o.type = type;
    o.group_size = gs;
    o.zero_point = zp;
    o.scale_type = type == DType::f8e4m3 || type == DType::f8e5m2 ? DType::f32 : DType::f16;
    compress_all_weights(p, o);
    return p;
}

}  // namespace

TEST_CASE("E2M1: the 16 values of the OCP MX table, and every code round-trips") {
    const double expected[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
    for (unsigned c = 0; c < 16; ++c) {
        const double v = f4e2m1_to_f64(static_cast<std::uint8_t>(c));
        CHECK(v == (c & 8 ? -expected[c & 7] : expected[c & 7]));
        CHECK(std::signbit(v) == ((c & 8) != 0));
        CHECK(f64_to_f4e2m1(v) == c);
    }
    CHECK(f64_to_f4e2m1(5.0) == 0x6);    // 5 is halfway between 4 and 6: ties to even (4 = 1.0 x 2^2)
    CHECK(f64_to_f4e2m1(2.5) == 0x4);    // halfway between 2 and 3: to even (2)
    CHECK(f64_to_f4e2m1(100.0) == 0x7);  // saturates at 6
    CHECK(f64_to_f4e2m1(-0.2) == 0x8);   // -0.2 rounds to -0
    CHECK_THROWS_AS(f64_to_f4e2m1(std::nan("")), InputError);
}

TEST_CASE("E4M3: bias 7, max 448, NaN = S.1111.111, no infinity; every code round-trips") {
    CHECK(f8e4m3_to_f64(0x7e) == 448.0);
    CHECK(f8e4m3_to_f64(0x01) == std::ldexp(1.0, -9));  // smallest subnormal
    CHECK(f8e4m3_to_f64(0x08) == std::ldexp(1.0, -6));  // smallest normal
    CHECK(f8e4m3_to_f64(0x38) == 1.0);
    CHECK(f8e4m3_to_f64(0xb8) == -1.0);
    CHECK(std::isnan(f8e4m3_to_f64(0x7f)));
    CHECK(std::isnan(f8e4m3_to_f64(0xff)));
    CHECK(f8e4m3_to_f64(0x78) == 256.0);  // exponent field 15 is a number, not infinity
    for (unsigned c = 0; c < 256; ++c) {
        const double v = f8e4m3_to_f64(static_cast<std::uint8_t>(c));
        if (std::isnan(v)) continue;
        CHECK(f64_to_f8e4m3(v) == c);
    }
    CHECK(f64_to_f8e4m3(1e6) == 0x7e);  // saturation
    CHECK(f64_to_f8e4m3(-std::numeric_limits<double>::infinity()) == 0xfe);
    CHECK(f64_to_f8e4m3(std::nan("")) == 0x7f);
    CHECK(f64_to_f8e4m3(-std::nan("")) == 0xff);  // a NaN keeps its sign: "-nan" in a catalogue
    CHECK(f64_to_f8e4m3(1.0 + 1.0 / 16) == 0x38);  // halfway between 1 and 1.125: to even
}

TEST_CASE("E5M2: bias 15, max 57344, IEEE infinities and NaNs; every code round-trips") {
    CHECK(f8e5m2_to_f64(0x7b) == 57344.0);
    CHECK(f8e5m2_to_f64(0x01) == std::ldexp(1.0, -16));
    CHECK(f8e5m2_to_f64(0x3c) == 1.0);
    CHECK(f8e5m2_to_f64(0x7c) == std::numeric_limits<double>::infinity());
    CHECK(f8e5m2_to_f64(0xfc) == -std::numeric_limits<double>::infinity());
    for (unsigned c : {0x7du, 0x7eu, 0x7fu, 0xfdu}) CHECK(std::isnan(f8e5m2_to_f64(static_cast<std::uint8_t>(c))));
    for (unsigned c = 0; c < 256; ++c) {
        const double v = f8e5m2_to_f64(static_cast<std::uint8_t>(c));
        if (std::isnan(v)) continue;
        CHECK(f64_to_f8e5m2(v) == c);
        // E5M2 is the top byte of f16: the same value.
        CHECK(f16_bits_to_f64(static_cast<std::uint16_t>(c << 8)) == v);
    }
    CHECK(f64_to_f8e5m2(1e9) == 0x7b);  // a finite value saturates
    CHECK(f64_to_f8e5m2(std::nan("")) == 0x7e);
    CHECK(f64_to_f8e5m2(-std::nan("")) == 0xfe);
}

TEST_CASE("E8M0: 2^(code - 127), 0xFF NaN, powers of two only") {
    CHECK(f8e8m0_to_f64(127) == 1.0);
    CHECK(f8e8m0_to_f64(0) == std::ldexp(1.0, -127));
    CHECK(f8e8m0_to_f64(254) == std::ldexp(1.0, 127));
    CHECK(std::isnan(f8e8m0_to_f64(0xff)));
    for (unsigned c = 0; c < 255; ++c) CHECK(f64_to_f8e8m0(f8e8m0_to_f64(static_cast<std::uint8_t>(c))) == c);
    CHECK_THROWS_AS(f64_to_f8e8m0(3.0), InputError);
    CHECK_THROWS_AS(f64_to_f8e8m0(-1.0), InputError);
}

TEST_CASE("4-bit tensors: two elements per byte, element 2i in the low nibble") {
    Tensor u(DType::u4, {2, 3});
    CHECK(u.nbytes() == 3);
    for (std::size_t i = 0; i < 6; ++i) u.set(i, static_cast<double>(i + 10));
    CHECK(u.data()[0] == 0xba);  // 10 low, 11 high
    CHECK(u.data()[2] == 0xfe);
    CHECK(u.get(5) == 15.0);
    Tensor s(DType::i4, {3});
    s.set(0, -8);
    s.set(1, 7);
    s.set(2, -1);
    CHECK(s.data()[0] == 0x78);
    CHECK(s.data()[1] == 0x0f);
    CHECK(s.get(0) == -8.0);
    CHECK(s.get(2) == -1.0);
    CHECK(s.code(2) == 0xff);  // sign-extended: the int8 of -1
    CHECK_THROWS_AS(u.set(0, 16.0), InputError);
    CHECK_THROWS_AS(s.set(0, -9.0), InputError);
    CHECK_THROWS_AS(s.set(0, 0.5), InputError);

    const std::vector<std::uint8_t> in = {3, 0xf8, 7, 0xff};
    Tensor t(DType::i4, {4});
    t.set_element_bytes(in.data());
    CHECK(t.element_bytes() == in);
    const std::vector<std::uint8_t> bad = {3, 1, 2, 0, 16, 5};
    Tensor v(DType::u4, {2, 3});
    try {
        v.set_element_bytes(bad.data());
        FAIL("accepted 16 as u4");
    } catch (const InputError& e) {
        CHECK(has(e.what(), "element [1, 1] is 16, outside u4's range [0, 15]"));
    }
}

TEST_CASE("dequantisation: (W - Z) * S per group, exact, the group of each input") {
    Problem p = plain_problem(G3, Convention::openvino, 2, 8, 4, 2, 1);
    Tensor w(DType::u4, {2, 4, 8}), s(DType::f16, {2, 4, 2}), z(DType::u4, {2, 4, 2});
    for (std::size_t i = 0; i < w.size(); ++i) w.set(i, static_cast<double>(i % 16));
    for (std::size_t i = 0; i < s.size(); ++i) s.set(i, 0.25 * static_cast<double>(i + 1));
    for (std::size_t i = 0; i < z.size(); ++i) z.set(i, static_cast<double>(i % 5));
    p.inputs[kWeight0] = w;
    p.inputs["weight_0_scale"] = s;
    p.inputs["weight_0_zero_point"] = z;
    REQUIRE(rejection(p) == "");
    const WeightCompression c = *weight_compression(p, kWeight0);
    CHECK(c.group_size == 4);
    CHECK(c.groups == 2);
    std::vector<double> row(8);
    dequantize_rows(p, kWeight0, c, 1, 2, 1, row.data());  // expert 1, row 2
    for (std::size_t k = 0; k < 8; ++k) {
        const std::size_t param = (1 * 4 + 2) * 2 + k / 4;
        CHECK(row[k] == (w.get((1 * 4 + 2) * 8 + k) - z.get(param)) * s.get(param));
    }
    const Problem q = with_dequantized_weights(p, DType::f32);
    CHECK(!q.has("weight_0_scale"));
    CHECK(q.input(kWeight0).dtype() == DType::f32);
    CHECK(rejection(q) == "");
}

TEST_CASE("every compressed type, per group and per channel, with and without zero point, is valid") {
    for (DType t : {DType::u8, DType::i8, DType::u4, DType::i4, DType::f8e4m3, DType::f8e5m2})
        for (std::size_t gs : {std::size_t{0}, std::size_t{16}})
            for (bool zp : {false, true}) {
                if (zp && !is_integer_weight(t)) continue;
                CAPTURE(dtype_name(t));
                CHECK(rejection(compressed(t, gs, zp)) == "");
                CHECK(rejection(compressed(t, gs, zp, G2)) == "");
            }
    CHECK(rejection(compressed(DType::f4e2m1)) == "");
    Problem r4 = plain_problem(G3, Convention::openvino, 5, 64, 32, 4, 2);
    CompressOptions o;
    o.scale_rank4 = true;
    o.zero_point_f16 = true;
    o.group_size = 16;
    compress_all_weights(r4, o);
    CHECK(rejection(r4) == "");  // [E, N, G, 1] and an f16 zero point, as OpenVINO converts them
    Problem pt = plain_problem(G3, Convention::openvino, 5, 64, 32, 4, 2);
    o = CompressOptions{};
    o.type = DType::f8e4m3;
    o.scale_type = DType::f32;
    o.per_tensor = true;
    compress_all_weights(pt, o);
    CHECK(rejection(pt) == "");
}

TEST_CASE("rejected: scale shape, group size, zero point without scale, range, E8M0 NaN, layout") {
    SUBCASE("a scale whose groups do not divide K") {
        Problem p = compressed(DType::u4, 16);
        p.inputs["weight_0_scale"] = Tensor(DType::f16, {4, 32, 5});
        CHECK(has(rejection(p), "weight_0_scale: shape [4, 32, 5] has G = 5 groups along K = 64"));
    }
    SUBCASE("a scale of the wrong shape") {
        Problem p = compressed(DType::u4, 16);
        p.inputs["weight_1_scale"] = Tensor(DType::f16, {4, 31, 4});
        CHECK(has(rejection(p), "weight_1_scale: expected shape [E, N, G] or [E, N, G, 1] with E = 4, N = 32"));
    }
    SUBCASE("a zero point without a scale") {
        Problem p = compressed(DType::u8, 16, true);
        p.inputs.erase("weight_2_scale");
        CHECK(has(rejection(p), "weight_2_zero_point is given without weight_2_scale"));
    }
    SUBCASE("a compressed weight without a scale") {
        Problem p = compressed(DType::i4);
        p.inputs.erase("weight_0_scale");
        CHECK(has(rejection(p), "weight_0: compressed element type i4 needs weight_0_scale"));
    }
    SUBCASE("an f16 zero point out of the weight's range or not an integer") {
        Problem p = compressed(DType::u4, 16, true);
        Tensor z(DType::f16, p.input("weight_0_zero_point").shape());
        z.set(3, 16.0);
        p.inputs["weight_0_zero_point"] = z;
        CHECK(has(rejection(p), "weight_0_zero_point: element [0, 0, 3] = 16"));
        z.set(3, 2.5);
        p.inputs["weight_0_zero_point"] = z;
        CHECK(has(rejection(p), "is not an integer in u4's range [0, 15]"));
    }
    SUBCASE("an E8M0 NaN scale") {
        Problem p = compressed(DType::f4e2m1);
        p.inputs["weight_1_scale"].data()[5] = 0xff;
        CHECK(has(rejection(p), "weight_1_scale: element [0, 2, 1] is the E8M0 NaN (0xFF)"));
    }
    SUBCASE("MXFP4 with a block other than 32, or another scale type") {
        Problem p = compressed(DType::f4e2m1);
        p.inputs["weight_0_scale"] = Tensor(DType::f8e8m0, {4, 32, 1});
        CHECK(has(rejection(p), "one scale per block of 32 inputs: expected G = K / 32 = 2 groups, got 1"));
        p.inputs["weight_0_scale"] = Tensor(DType::f16, {4, 32, 2});
        CHECK(has(rejection(p), "f4e2m1 weights (MXFP4) take f8e8m0 scales"));
    }
    SUBCASE("a zero point on FP8, of the wrong type, of the wrong shape") {
        Problem p = compressed(DType::f8e4m3);
        p.inputs["weight_0_zero_point"] = Tensor(DType::f8e4m3, p.input("weight_0_scale").shape());
        CHECK(has(rejection(p), "weight_0_zero_point: f8e4m3 weights take no zero point"));
        Problem q = compressed(DType::u4, 16, true);
        q.inputs["weight_0_zero_point"] = Tensor(DType::i32, q.input("weight_0_scale").shape());
        CHECK(has(rejection(q), "weight_0_zero_point: element type i32 (expected u4, the weight's type, or f16)"));
        q.inputs["weight_0_zero_point"] = Tensor(DType::u4, {4, 32, 2});
        CHECK(has(rejection(q), "does not match weight_0_scale [4, 32, 4]"));
    }
    SUBCASE("a scale for a weight that is not compressed, or not there") {
        Problem p = plain_problem(G3, Convention::openvino, 5, 64, 32, 4, 2);
        p.inputs["weight_0_scale"] = Tensor(DType::f16, {4, 32, 1});
        CHECK(has(rejection(p), "weight_0_scale is given but weight_0 is not compressed (element type f32)"));
        Problem q = compressed(DType::u8, 0, false, G2);
        q.inputs["weight_2_scale"] = Tensor(DType::f16, {4, 64, 1});
        CHECK(has(rejection(q), "unknown input") == false);
        CHECK(has(rejection(q), "weight_2_scale is given but there is no weight_2"));
    }
    SUBCASE("a scale type that does not go with the weight") {
        Problem p = compressed(DType::u8);
        p.inputs["weight_0_scale"] = Tensor(DType::f8e8m0, p.input("weight_0_scale").shape());
        CHECK(has(rejection(p), "weight_0_scale: element type f8e8m0 is not a scale type for u8 weights"));
    }
    SUBCASE("compressed weights in the KN layout") {
        Problem p = plain_problem(G2, Convention::spec, 5, 64, 32, 4, 2);  // spec GEMM2: KN
        p.inputs[kWeight1] = Tensor(DType::u8, p.input(kWeight1).shape());
        p.inputs["weight_1_scale"] = Tensor(DType::f16, {4, 64, 1});
        CHECK(has(rejection(p), "weight_1: compressed weights are stored [E, N, K] (weight_layout NK"));
    }
    SUBCASE("compressed weights stored NK in a case whose convention says KN: the layout is named, not the shape") {
        Problem p = compressed(DType::u4, 0, false, G2);  // openvino: NK, shapes [E, N, K]
        p.attributes.convention = Convention::spec;       // KN: the same shapes read as [E, K, N]
        p.attributes.gate_idx.reset();                    // not an attribute of the spec convention
        CHECK(has(rejection(p), "weight_0: compressed weights are stored [E, N, K] (weight_layout NK"));
    }
    SUBCASE("a compressed bias, or a compressed index") {
        Problem p = compressed(DType::u8, 0, false, G2);
        p.inputs[kBias0] = Tensor(DType::u8, p.input(kBias0).shape());
        CHECK(has(rejection(p), "bias_0: element type u8 differs from hidden_states' f32"));
        Problem q = compressed(DType::u8);
        q.inputs[kTopkIndices] = Tensor(DType::u8, q.input(kTopkIndices).shape());
        CHECK(has(rejection(q), "router_topk_output_indices: element type u8 is not an index type"));
    }
    SUBCASE("4-bit weights with an odd input size") {
        Problem p = plain_problem(G3, Convention::openvino, 5, 63, 32, 4, 2);
        CompressOptions o;
        o.type = DType::u8;
        compress_weight(p, kWeight0, o);
        p.inputs[kWeight0] = Tensor(DType::u4, p.input(kWeight0).shape());
        CHECK(has(rejection(p), "weight_0: 4-bit element type u4 needs an even input size K"));
    }
}
