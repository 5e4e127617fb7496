// The reference on compressed weights (spec/compressed.md): it dequantises exactly in f64 and then
// runs the same computation, so its result is bit for bit the reference of the same problem with
// the dequantised weights given in f64 (and every other input widened to f64, exactly).
#include <doctest/doctest.h>

#include "compressed_problem.hpp"
#include "moe/reference/error_terms.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/spec/compression.hpp"
#include "plain_problem.hpp"

using namespace moe;

namespace {

// Every data input in f64 (exact), compressed weights as their exact f64 values.
Problem widened(const Problem& p) {
    Problem q = with_dequantized_weights(p, DType::f64);
    for (auto& [name, t] : q.inputs)
        if (name != kTopkIndices && t.dtype() != DType::f64) t = Tensor::from_f64(DType::f64, t.shape(), t.to_f64());
    return q;
}

}  // namespace

TEST_CASE("compressed weights: the reference equals the reference of the exactly dequantised problem") {
    for (ExpertType et : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu})
        for (DType t : {DType::u8, DType::i8, DType::u4, DType::i4, DType::f4e2m1, DType::f8e4m3, DType::f8e5m2})
            for (bool zp : {false, true}) {
                if (zp && !is_integer_weight(t)) continue;
                Problem p = test::plain_problem(et, Convention::openvino, 6, 64, 32, 4, 2, DType::bf16);
                test::CompressOptions o;
                o.type = t;
                o.group_size = 16;
                o.zero_point = zp;
                o.scale_type = t == DType::f8e4m3 ? DType::f32 : DType::f16;
                test::compress_all_weights(p, o);
                CAPTURE(dtype_name(t));
                const Problem q = widened(p);
                for (auto mode : {reference::Mode::sparse, reference::Mode::dense}) {
                    const auto a = reference::run(p, {mode, true, 2});
                    const auto b = reference::run(q, {mode, true, 1});
                    CHECK(a.output == b.output);
                    CHECK(a.stages == b.stages);
                }
                const auto ta = reference::error_terms(p, false, 1).output;
                const auto tb = reference::error_terms(q, false, 1).output;
                CHECK(ta == tb);
            }
}

TEST_CASE("compressed weights: a hand-checked u4 expert with a zero point and two groups") {
    // GEMM3, one token, one expert (K = 1), H = 4, I = 2, group size 2.
    Problem p = test::plain_problem(ExpertType::gemm3_swiglu, Convention::openvino, 1, 4, 2, 1, 1);
    p.attributes = attributes_for(ExpertType::gemm3_swiglu, Convention::openvino, 0.0, 0.0);  // swish = x / 2
    Tensor x(DType::f32, {1, 4});
    for (std::size_t k = 0; k < 4; ++k) x.set(k, 1.0);
    p.inputs[kHiddenStates] = x;
    auto u4 = [](Shape s, std::vector<double> v) { return Tensor::from_f64(DType::u4, std::move(s), v); };
    auto f16 = [](Shape s, std::vector<double> v) { return Tensor::from_f64(DType::f16, std::move(s), v); };
    // W0 rows: [1, 2, 3, 4] and [5, 6, 7, 8]; Z = [1, 2] per row and group; S = [0.5, 0.25].
    p.inputs[kWeight0] = u4({1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
    p.inputs["weight_0_scale"] = f16({1, 2, 2}, {0.5, 0.25, 0.5, 0.25});
    p.inputs["weight_0_zero_point"] = u4({1, 2, 2}, {1, 2, 1, 2});
    // gate_0 = ((1-1) + (2-1)) * 0.5 + ((3-2) + (4-2)) * 0.25 = 1.25; gate_1 = (4 + 5) * 0.5 + (5 + 6) * 0.25 = 7.25
    p.inputs[kWeight1] = u4({1, 2, 4}, {2, 2, 2, 2, 2, 2, 2, 2});
    p.inputs["weight_1_scale"] = f16({1, 2, 1}, {1.0, 1.0});  // up = 8, 8
    p.inputs[kWeight2] = u4({1, 4, 2}, {1, 0, 0, 1, 1, 1, 0, 0});
    p.inputs["weight_2_scale"] = f16({1, 4, 1}, {1.0, 1.0, 1.0, 1.0});
    // act = gate / 2 * up = [5, 29]; down = [5, 29, 34, 0]
    const Tensor out = reference::run(p).output;
    CHECK(out.get(0) == 5.0);
    CHECK(out.get(1) == 29.0);
    CHECK(out.get(2) == 34.0);
    CHECK(out.get(3) == 0.0);
}
