// The f64 reference against hand-computed values and an independent naive implementation, in
// both modes, both expert types and both conventions.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include "moe/reference/error_terms.hpp"
#include "moe/reference/gemm.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/spec/error.hpp"
#include "plain_problem.hpp"

using namespace moe;
using moe::test::plain_problem;
using moe::test::PlainShape;

namespace {

// Written from spec/README.md, sharing no code with the reference: per token, per slot, index
// the weights by hand for the layout, libm's exp, textbook loops.
std::vector<double> naive(const Problem& p) {
    const ResolvedParams r = resolve(p.attributes);
    const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    const Tensor& x = p.input(kHiddenStates);
    const Tensor& idx = p.input(kTopkIndices);
    const Tensor& rw = p.input(kRoutingWeights);
    const std::size_t H = x.shape().back(), T = x.size() / H, K = idx.shape().back();
    const Tensor& w0 = p.input(kWeight0);
    const std::size_t N0 = r.weight_layout == WeightLayout::NK ? w0.shape()[1] : w0.shape()[2];
    const std::size_t I = gemm2 ? N0 / 2 : N0;
    // W[e] as a function (n, k) -> value for either layout.
    auto w_at = [&](const Tensor& w, std::size_t e, std::size_t n, std::size_t k, std::size_t N, std::size_t Kdim) {
        return r.weight_layout == WeightLayout::NK ? w.get((e * N + n) * Kdim + k) : w.get((e * Kdim + k) * N + n);
    };
    auto sw = [&](double v) { return v / (1.0 + std::exp(-r.swish_beta * v)); };
    std::vector<double> out(T * H, 0.0);
    for (std::size_t t = 0; t < T; ++t) {
        for (std::size_t k = 0; k < K; ++k) {
            const auto e = static_cast<std::size_t>(idx.get_index(t * K + k));
            const double weight = r.routing_layout == RoutingLayout::compact ? rw.get(t * K + k) : rw.get(e * T + t);
            std::vector<double> act(I);
            if (gemm2) {
                std::vector<double> gu(2 * I);
                for (std::size_t n = 0; n < 2 * I; ++n) {
                    double s = p.has(kBias0) ? p.input(kBias0).get(e * 2 * I + n) : 0.0;
                    for (std::size_t h = 0; h < H; ++h) s += x.get(t * H + h) * w_at(w0, e, n, h, 2 * I, H);
                    gu[n] = s;
                }
                const double L = r.clamp_limit;
                for (std::size_t j = 0; j < I; ++j) {
                    const double gate = std::min(gu[2 * j + r.gate_lane], L);
                    const double lin = std::max(-L, std::min(gu[2 * j + 1 - r.gate_lane], L));
                    act[j] = (lin + 1.0) * sw(gate);
                }
            } else {
                for (std::size_t j = 0; j < I; ++j) {
                    double g = 0, u = 0;
                    for (std::size_t h = 0; h < H; ++h) {
                        g += x.get(t * H + h) * w_at(w0, e, j, h, I, H);
                        u += x.get(t * H + h) * w_at(p.input(kWeight1), e, j, h, I, H);
                    }
                    act[j] = sw(g) * u;
                }
            }
            const Tensor& wd = p.input(gemm2 ? kWeight1 : kWeight2);
            for (std::size_t h = 0; h < H; ++h) {
                double s = gemm2 && p.has(kBias1) ? p.input(kBias1).get(e * H + h) : 0.0;
                for (std::size_t j = 0; j < I; ++j) s += act[j] * w_at(wd, e, h, j, H, I);
                out[t * H + h] += weight * s;
            }
        }
    }
    return out;
}

void check_close(const Tensor& got, const std::vector<double>& want, double rel) {
    REQUIRE(got.size() == want.size());
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    for (std::size_t i = 0; i < want.size(); ++i) REQUIRE(std::fabs(got.get(i) - want[i]) <= rel * scale);
}

bool bit_identical(const Tensor& a, const Tensor& b) { return a == b; }

}  // namespace

TEST_CASE("a GEMM2 case computed by hand, openvino convention") {
    // T=1, H=2, I=1, E=2, K=1: token 0 -> expert 1 with weight 0.5.
    Problem p;
    p.attributes = attributes_for(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, /*beta*/ 1.0,
                                  /*limit*/ 1.0, /*lane*/ 0);
    p.inputs[kHiddenStates] = Tensor::from_f64(DType::f32, {1, 2}, {1.0, 2.0});
    p.inputs[kTopkIndices] = Tensor::from_f64(DType::i32, {1, 1}, {1});
    p.inputs[kRoutingWeights] = Tensor::from_f64(DType::f32, {1, 1}, {0.5});
    // weight_0 NK [E=2, 2I=2, H=2]; expert 1: gate row [1, 0], lin row [0, 1].
    p.inputs[kWeight0] = Tensor::from_f64(DType::f32, {2, 2, 2}, {9, 9, 9, 9, 1, 0, 0, 1});
    p.inputs[kBias0] = Tensor::from_f64(DType::f32, {2, 1, 2}, {9, 9, 0.5, -1.5});
    // weight_1 NK [E=2, H=2, I=1]; expert 1: [2, -1].
    p.inputs[kWeight1] = Tensor::from_f64(DType::f32, {2, 2, 1}, {9, 9, 2, -1});
    p.inputs[kBias1] = Tensor::from_f64(DType::f32, {2, 1, 2}, {9, 9, 0.25, 0});
    // gate_up = [1 + 0.5, 2 - 1.5] = [1.5, 0.5]; gate = min(1.5, 1) = 1; lin = clamp(0.5) = 0.5.
    const double a = (0.5 + 1.0) * (1.0 / (1.0 + std::exp(-1.0)));
    const double want[2] = {0.5 * (2 * a + 0.25), 0.5 * (-a)};
    for (auto mode : {reference::Mode::sparse, reference::Mode::dense}) {
        const auto r = reference::run(p, {mode, true, 1});
        CHECK(r.output.get(0) == doctest::Approx(want[0]).epsilon(1e-15));
        CHECK(r.output.get(1) == doctest::Approx(want[1]).epsilon(1e-15));
        CHECK(r.stages.at("gate_up").get(0) == 1.5);
        CHECK(r.stages.at("gate_up").get(1) == 0.5);
        CHECK(r.stages.at("act").get(0) == doctest::Approx(a).epsilon(1e-15));
    }
    // gate_idx 1 swaps the lanes: gate = 0.5, lin = clamp(1.5) = 1.
    p.attributes.gate_idx = 1;
    const double a1 = 2.0 * (0.5 / (1.0 + std::exp(-0.5)));
    CHECK(reference::run(p).output.get(1) == doctest::Approx(0.5 * -a1).epsilon(1e-15));
}

TEST_CASE("the spec convention reads alpha as swish beta and beta as clamp limit, lanes odd, KN weights") {
    Problem p;
    p.attributes = default_attributes(ExpertType::gemm2_bias_swiglu_clamp, Convention::spec);
    p.attributes.expert_alpha = 2.0;  // swish beta
    p.attributes.expert_beta = 3.0;   // clamp limit
    p.inputs[kHiddenStates] = Tensor::from_f64(DType::f64, {1, 1}, {1.0});
    p.inputs[kTopkIndices] = Tensor::from_f64(DType::i64, {1, 1}, {0});
    p.inputs[kRoutingWeights] = Tensor::from_f64(DType::f64, {1, 1, 1}, {1.0});  // dense [E, T, 1]
    // weight_0 KN [E=1, H=1, 2I=2]: gate_up = [10, -0.25]. Spec: clamp lane ::2, swish lane 1::2.
    p.inputs[kWeight0] = Tensor::from_f64(DType::f64, {1, 1, 2}, {10.0, -0.25});
    p.inputs[kWeight1] = Tensor::from_f64(DType::f64, {1, 1, 1}, {1.0});
    const double want = (3.0 + 1.0) * (-0.25 / (1.0 + std::exp(0.5)));
    CHECK(reference::run(p).output.get(0) == doctest::Approx(want).epsilon(1e-15));
    CHECK(reference::run(p, {reference::Mode::dense}).output.get(0) == reference::run(p).output.get(0));
}

TEST_CASE("GEMM3 uses the up projection: down(swish(x W0^T) * (x W1^T))") {
    Problem p;
    p.attributes = default_attributes(ExpertType::gemm3_swiglu, Convention::openvino);
    p.inputs[kHiddenStates] = Tensor::from_f64(DType::f32, {1, 1}, {2.0});
    p.inputs[kTopkIndices] = Tensor::from_f64(DType::i32, {1, 1}, {0});
    p.inputs[kRoutingWeights] = Tensor::from_f64(DType::f32, {1, 1}, {1.0});
    p.inputs[kWeight0] = Tensor::from_f64(DType::f32, {1, 1, 1}, {0.5});   // gate = 1
    p.inputs[kWeight1] = Tensor::from_f64(DType::f32, {1, 1, 1}, {-3.0});  // up = -6
    p.inputs[kWeight2] = Tensor::from_f64(DType::f32, {1, 1, 1}, {0.25});
    const double want = 0.25 * (1.0 / (1.0 + std::exp(-1.0))) * -6.0;
    CHECK(reference::run(p).output.get(0) == doctest::Approx(want).epsilon(1e-15));
}

TEST_CASE("both modes agree with an independent naive implementation") {
    for (auto type : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu}) {
        for (auto conv : {Convention::spec, Convention::openvino}) {
            for (auto dtype : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
                CAPTURE(expert_type_name(type));
                CAPTURE(convention_name(conv));
                CAPTURE(dtype_name(dtype));
                const Problem p = plain_problem(type, conv, 7, 20, 9, 5, 3, dtype);
                const auto want = naive(p);
                const auto sparse = reference::run(p, {reference::Mode::sparse, false, 1});
                const auto dense = reference::run(p, {reference::Mode::dense, false, 1});
                check_close(sparse.output, want, 1e-13);
                CHECK(bit_identical(sparse.output, dense.output));
            }
        }
    }
}

TEST_CASE("rank-3 hidden states and [B, S, K] indices give the same result as the flattened problem") {
    PlainShape s;
    s.T = 6;
    s.batch = 2;
    s.indices_bsk = true;
    const Problem p3 = plain_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, s);
    CHECK(p3.input(kHiddenStates).shape() == Shape{2, 3, 12});
    CHECK(p3.input(kTopkIndices).shape() == Shape{2, 3, 2});
    const auto r = reference::run(p3);
    CHECK(r.output.shape() == Shape{2, 3, 12});
    check_close(r.output, naive(p3), 1e-13);
    CHECK(bit_identical(r.output, reference::run(p3, {reference::Mode::dense}).output));
}

TEST_CASE("dense routing as [E, T, 1, 1] or [E, 1, T, 1] gives the result of [E, T, 1]") {
    const Problem p = plain_problem(ExpertType::gemm3_swiglu, Convention::spec, 5, 12, 8, 4, 2);
    const Tensor& rw = p.input(kRoutingWeights);
    REQUIRE(rw.shape() == Shape{4, 5, 1});
    const auto want = reference::run(p, {reference::Mode::sparse, true, 1}).output;
    for (const Shape& s : {Shape{4, 5, 1, 1}, Shape{4, 1, 5, 1}}) {
        Problem q = p;
        Tensor r4(rw.dtype(), s);
        for (std::size_t i = 0; i < rw.size(); ++i) r4.set(i, rw.get(i));
        q.inputs[kRoutingWeights] = r4;
        CHECK(bit_identical(reference::run(q, {reference::Mode::sparse, true, 1}).output, want));
        CHECK(bit_identical(reference::run(q, {reference::Mode::dense, true, 1}).output,
                            reference::run(p, {reference::Mode::dense, true, 1}).output));
    }
}

TEST_CASE("results do not depend on the thread count, and stages agree between modes") {
    // 11 rows an expert on average: its products (11 x 192 x 256) are above the size under which
    // gemm_abt stays on one thread, so the 2-thread run splits them.
    const std::size_t T = 33, H = 256, I = 192, E = 6, K = 2;
    REQUIRE(T * K / E * I * H >= reference::kParallelMacs);
    const Problem p = plain_problem(ExpertType::gemm3_swiglu, Convention::openvino, T, H, I, E, K);
    const auto one = reference::run(p, {reference::Mode::sparse, true, 1});
    const auto two = reference::run(p, {reference::Mode::sparse, true, 2});
    const auto dense = reference::run(p, {reference::Mode::dense, true, 2});
    CHECK(bit_identical(one.output, two.output));
    for (const auto& name : reference::stage_names(ExpertType::gemm3_swiglu)) {
        CAPTURE(name);
        CHECK(bit_identical(one.stages.at(name), two.stages.at(name)));
        CHECK(bit_identical(one.stages.at(name), dense.stages.at(name)));
    }
    CHECK(one.stages.at("gate").shape() == Shape{33, 2, 192});
    CHECK(one.stages.at("down").shape() == Shape{33, 2, 256});
}

TEST_CASE("T = 0 gives an empty output of the right shape") {
    const Problem p = plain_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::spec, 0);
    const auto r = reference::run(p, {reference::Mode::sparse, true, 1});
    CHECK(r.output.shape() == Shape{0, 12});
    CHECK(r.stages.at("gate_up").shape() == Shape{0, 2, 12});
    CHECK(reference::run(p, {reference::Mode::dense}).output.shape() == Shape{0, 12});
}

TEST_CASE("non-finite data: the dense reading turns 0 * Inf into NaN, the sparse one does not") {
    PlainShape s;
    s.T = 4;
    s.H = 8;
    s.I = 4;
    s.K = 1;
    s.exclude = {3};                                 // no token uses expert 3 ...
    Problem p = plain_problem(ExpertType::gemm3_swiglu, Convention::openvino, s);
    p.inputs[kWeight2].set((3 * 8 + 5) * 4 + 1, INFINITY);  // ... whose down weight [3, 5, 1] holds an Inf
    const auto sparse = reference::run(p).output;
    const auto dense = reference::run(p, {reference::Mode::dense}).output;
    for (std::size_t t = 0; t < 4; ++t) {
        for (std::size_t h = 0; h < 8; ++h) {
            CHECK(std::isfinite(sparse.get(t * 8 + h)));
            if (h == 5) CHECK(std::isnan(dense.get(t * 8 + h)));
            else CHECK(dense.get(t * 8 + h) == sparse.get(t * 8 + h));
        }
    }
}

TEST_CASE("an infinite first-GEMM value carries no error: the bounds stay finite where the output is") {
    // bias_0 = +-inf on a linear lane, +inf on a gate lane: the clamp or the gate's minimum with
    // the limit make the activation exact and the output finite. Slope times an infinite magnitude
    // once made that token's bound infinite, which passes any output. (-inf on a gate lane gives
    // swish(-inf) = NaN, spec/README.md: those outputs are compared by class.)
    for (const double inf : {INFINITY, -INFINITY}) {
        for (const bool on_gate : {true, false}) {
            CAPTURE(inf);
            CAPTURE(on_gate);
            Problem p = plain_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino);
            const ResolvedParams r = resolve(p.attributes);
            const std::size_t I = 6, expert = static_cast<std::size_t>(p.input(kTopkIndices).get_index(0)),
                              lane = 2 * 1 + (on_gate ? r.gate_lane : 1 - r.gate_lane);
            p.inputs[kBias0].set(expert * 2 * I + lane, inf);
            const Tensor out = reference::run(p).output;
            const auto terms = reference::error_terms(p, false, 1).output;
            std::size_t finite = 0;
            for (std::size_t i = 0; i < out.size(); ++i) {
                if (!std::isfinite(out.get(i))) continue;
                ++finite;
                double bound = 0.0;
                for (const auto& [name, t] : terms) {
                    CAPTURE(name);
                    CHECK(std::isfinite(t.get(i)));
                    bound += t.get(i);
                }
                CHECK(bound > 0.0);
            }
            if (on_gate && inf < 0)
                CHECK(finite < out.size());
            else
                CHECK(finite == out.size());  // token 0's output included
        }
    }
}

TEST_CASE("rounded stages: the named stages kept in the storage type, the next step reading them; sparse mode only") {
    // The readings of a storage-rounding case (moe/reference/storage_rounding.hpp).
    const Problem p = plain_problem(ExpertType::gemm3_swiglu, Convention::openvino);
    const auto plain = reference::run(p, {reference::Mode::sparse, true, 1});
    reference::Options o{reference::Mode::sparse, true, 1};
    o.storage = DType::bf16;
    o.rounded_stages = 1u << 2;  // stage_names(): gate, up, act, down
    const auto act = reference::run(p, o);
    CHECK(bit_identical(act.stages.at("gate"), plain.stages.at("gate")));
    CHECK(bit_identical(act.stages.at("up"), plain.stages.at("up")));
    bool moved = false;
    for (std::size_t i = 0; i < plain.stages.at("act").size(); ++i) {
        const double v = plain.stages.at("act").get(i);
        CHECK(act.stages.at("act").get(i) == round_to(DType::bf16, v));
        moved |= round_to(DType::bf16, v) != v;
    }
    CHECK(moved);
    CHECK_FALSE(bit_identical(act.output, plain.output));

    const Problem g2 = plain_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::spec);
    o.rounded_stages = 7u;  // gate_up, act, down
    o.storage = DType::f16;
    for (const auto& [name, t] : reference::run(g2, o).stages)
        for (std::size_t i = 0; i < t.size(); ++i) CHECK_MESSAGE(round_to(DType::f16, t.get(i)) == t.get(i), name);
    o.mode = reference::Mode::dense;
    CHECK_THROWS_AS(reference::run(g2, o), std::logic_error);
}

TEST_CASE("run() validates before computing") {
    Problem p = plain_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino);
    p.inputs[kTopkIndices].set_index(3, 99);
    CHECK_THROWS_AS(reference::run(p), InputError);
}
