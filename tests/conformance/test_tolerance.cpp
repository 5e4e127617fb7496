// The tolerance model (conformance/tolerance.hpp, spec/tolerance.md): the accumulation factor,
// the per-term coefficients a backend's declared precision gives, when an exact case is compared
// with zero tolerance, and ulp().
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "moe/conformance/tolerance.hpp"
#include "compressed_problem.hpp"
#include "moe/reference/error_terms.hpp"
#include "plain_problem.hpp"

using namespace moe;
using namespace moe::conformance;

namespace {

const double u32 = std::ldexp(1.0, -24), u16 = std::ldexp(1.0, -11), ubf16 = std::ldexp(1.0, -8),
             u64 = std::ldexp(1.0, -53);

double gamma(std::size_t n, double u) { return static_cast<double>(n) * u / (1.0 - static_cast<double>(n) * u); }

Dims dims(std::size_t H = 12, std::size_t I = 6, std::size_t K = 2) {
    Dims d;
    d.T = 5;
    d.H = H;
    d.I = I;
    d.E = 4;
    d.K = K;
    d.S = 5;
    return d;
}

}  // namespace

TEST_CASE("accumulation_factor: gamma_n for short sums, lambda sqrt(n) u for long ones") {
    CHECK(kLambda == 6.0);
    CHECK(accumulation_factor(0, u32) == 0.0);
    CHECK(accumulation_factor(1, u32) == gamma(1, u32));
    // In f32 the two bounds cross between n = 35 (gamma_35 = 35.0000..u < 6 sqrt(35) u = 35.5 u)
    // and n = 36 (6 sqrt(36) u = 36 u < gamma_36).
    CHECK(accumulation_factor(35, u32) == gamma(35, u32));
    CHECK(accumulation_factor(35, u32) < kLambda * std::sqrt(35.0) * u32);
    CHECK(accumulation_factor(36, u32) == 36.0 * u32);
    CHECK(accumulation_factor(36, u32) < gamma(36, u32));
    CHECK(accumulation_factor(4096, u32) == kLambda * 64.0 * u32);
    // A larger u pulls the crossover down: in f16, gamma_35 = 35.6 u already exceeds 35.5 u.
    CHECK(accumulation_factor(35, u16) == kLambda * std::sqrt(35.0) * u16);
    CHECK(accumulation_factor(30, u16) == gamma(30, u16));
    // Where n u >= 1 the deterministic bound is infinite; the probabilistic one still holds.
    CHECK(accumulation_factor(2048, u16) == kLambda * std::sqrt(2048.0) * u16);
    CHECK(accumulation_factor(300, ubf16) == kLambda * std::sqrt(300.0) * ubf16);
    CHECK(std::isfinite(accumulation_factor(1u << 20, ubf16)));
}

TEST_CASE("accumulation_factor grows with n and with u") {
    for (double u : {u64, u32, u16, ubf16}) {
        CAPTURE(u);
        double previous = accumulation_factor(0, u);
        for (std::size_t n = 1; n <= 5000; ++n) {
            const double f = accumulation_factor(n, u);
            CAPTURE(n);
            REQUIRE(f > previous);
            previous = f;
        }
    }
    for (std::size_t n : {1u, 7u, 35u, 36u, 1000u}) {
        CAPTURE(n);
        CHECK(accumulation_factor(n, u64) < accumulation_factor(n, u32));
        CHECK(accumulation_factor(n, u32) < accumulation_factor(n, u16));
        CHECK(accumulation_factor(n, u16) < accumulation_factor(n, ubf16));
    }
}

TEST_CASE("tolerance_model: the coefficients of an f32 backend on f32 data") {
    const Dims d = dims(12, 6, 2);
    const ToleranceModel m = tolerance_model({DType::f32, DType::f32}, DType::f32, d);
    // One coefficient per error term of the reference's analysis, for the stages and the output.
    std::vector<std::string> names;
    for (const auto& [name, c] : m.stage_coefficient) names.push_back(name);
    std::vector<std::string> want = reference::error_term_names();
    std::sort(want.begin(), want.end());
    CHECK(names == want);
    CHECK(m.output_coefficient.size() == want.size());
    // Accumulations of length H + 1 (bias included) and I + 1; stores and the activation one u.
    CHECK(m.stage_coefficient.at("first_acc") == accumulation_factor(13, u32));
    CHECK(m.stage_coefficient.at("down_acc") == accumulation_factor(7, u32));
    for (const char* t : {"first_store", "act_eval", "act_store", "down_store"}) {
        CAPTURE(t);
        CHECK(m.stage_coefficient.at(t) == u32);
    }
    // At the output the down store also carries the top-k reduction (K + 1 terms).
    CHECK(m.output_coefficient.at("down_store") == u32 + accumulation_factor(3, u32));
    for (const char* t : {"first_acc", "first_store", "act_eval", "act_store", "down_acc"})
        CHECK(m.output_coefficient.at(t) == m.stage_coefficient.at(t));
    CHECK(m.output_rounding == u32);
    CHECK(m.output_floor == 0.5 * std::ldexp(1.0, -149));
}

TEST_CASE("tolerance_model: longer sums and more slots widen the accumulation terms only") {
    const ToleranceModel small = tolerance_model({DType::f32, DType::f32}, DType::f32, dims(12, 6, 2));
    const ToleranceModel big_h = tolerance_model({DType::f32, DType::f32}, DType::f32, dims(4096, 6, 2));
    const ToleranceModel big_i = tolerance_model({DType::f32, DType::f32}, DType::f32, dims(12, 1024, 2));
    const ToleranceModel big_k = tolerance_model({DType::f32, DType::f32}, DType::f32, dims(12, 6, 8));
    CHECK(big_h.stage_coefficient.at("first_acc") > small.stage_coefficient.at("first_acc"));
    CHECK(big_h.stage_coefficient.at("down_acc") == small.stage_coefficient.at("down_acc"));
    CHECK(big_i.stage_coefficient.at("down_acc") > small.stage_coefficient.at("down_acc"));
    CHECK(big_i.stage_coefficient.at("first_acc") == small.stage_coefficient.at("first_acc"));
    CHECK(big_k.output_coefficient.at("down_store") > small.output_coefficient.at("down_store"));
    CHECK(big_k.stage_coefficient == small.stage_coefficient);
}

TEST_CASE("tolerance_model: lower precision gives wider coefficients, term by term") {
    const Dims d = dims(64, 32, 4);
    // Compute and storage in the same type, on f32 data: f64 < f32 < f16 < bf16 for every term.
    const DType order[] = {DType::f64, DType::f32, DType::f16, DType::bf16};
    for (std::size_t i = 0; i + 1 < 4; ++i) {
        const ToleranceModel narrow = tolerance_model({order[i], order[i]}, DType::f32, d);
        const ToleranceModel wide = tolerance_model({order[i + 1], order[i + 1]}, DType::f32, d);
        for (const auto& [name, c] : narrow.stage_coefficient) {
            CAPTURE(dtype_name(order[i]));
            CAPTURE(name);
            CHECK(c < wide.stage_coefficient.at(name));
            CHECK(narrow.output_coefficient.at(name) < wide.output_coefficient.at(name));
        }
    }
    // Data in a lower type: the output rounding and floor are the data type's.
    const ToleranceModel f16 = tolerance_model({DType::f32, DType::f32}, DType::f16, d);
    CHECK(f16.output_rounding == u16);
    CHECK(f16.output_floor == std::ldexp(1.0, -25));
    const ToleranceModel bf16 = tolerance_model({DType::f32, DType::f32}, DType::bf16, d);
    CHECK(bf16.output_rounding == ubf16);
    CHECK(bf16.output_floor == std::ldexp(1.0, -134));
    const ToleranceModel f64 = tolerance_model({DType::f64, DType::f64}, DType::f64, d);
    CHECK(f64.output_rounding == u64);
    CHECK(f64.output_floor == 0.5 * std::numeric_limits<double>::denorm_min());
    CHECK(f64.stage_coefficient.at("first_acc") == accumulation_factor(65, u64));
}

TEST_CASE("tolerance_model: storage rounding adds to the store terms only") {
    const Dims d = dims(64, 32, 4);
    const ToleranceModel f32 = tolerance_model({DType::f32, DType::f32}, DType::f16, d);
    for (DType storage : {DType::f16, DType::bf16}) {
        CAPTURE(dtype_name(storage));
        const ToleranceModel lowp = tolerance_model({DType::f32, storage}, DType::f16, d);
        const double extra = unit_roundoff(storage) - u32;
        for (const char* t : {"first_store", "act_store", "down_store"}) {
            CAPTURE(t);
            CHECK(lowp.stage_coefficient.at(t) == doctest::Approx(f32.stage_coefficient.at(t) + extra).epsilon(1e-12));
            CHECK(lowp.output_coefficient.at(t) == doctest::Approx(f32.output_coefficient.at(t) + extra).epsilon(1e-12));
        }
        for (const char* t : {"first_acc", "act_eval", "down_acc"}) {
            CAPTURE(t);
            CHECK(lowp.stage_coefficient.at(t) == f32.stage_coefficient.at(t));
        }
        CHECK(lowp.output_rounding == f32.output_rounding);
    }
}

TEST_CASE("tolerance_model: computing below the data type also rounds x and W (2 u more per product)") {
    const Dims d = dims(64, 32, 4);
    const ToleranceModel m = tolerance_model({DType::f16, DType::f16}, DType::f32, d);
    CHECK(m.stage_coefficient.at("first_acc") == accumulation_factor(65, u16) + 2.0 * u16);
    CHECK(m.stage_coefficient.at("down_acc") == accumulation_factor(33, u16) + 2.0 * u16);
    CHECK(m.stage_coefficient.at("act_eval") == u16);
    // Computing in the data type (or above it) rounds no input.
    const ToleranceModel same = tolerance_model({DType::f16, DType::f16}, DType::f16, d);
    CHECK(same.stage_coefficient.at("first_acc") == accumulation_factor(65, u16));
    const ToleranceModel above = tolerance_model({DType::f32, DType::f32}, DType::bf16, d);
    CHECK(above.stage_coefficient.at("first_acc") == accumulation_factor(65, u32));
}

TEST_CASE("exact_comparison_applies: an exact case, and compute and storage of at least 24 bits") {
    CHECK(exact_comparison_applies(true, {DType::f32, DType::f32}));
    CHECK(exact_comparison_applies(true, {DType::f64, DType::f64}));
    CHECK(exact_comparison_applies(true, {DType::f64, DType::f32}));
    CHECK_FALSE(exact_comparison_applies(false, {DType::f32, DType::f32}));
    CHECK_FALSE(exact_comparison_applies(true, {DType::f32, DType::bf16}));
    CHECK_FALSE(exact_comparison_applies(true, {DType::f32, DType::f16}));
    CHECK_FALSE(exact_comparison_applies(true, {DType::f16, DType::f32}));
    CHECK_FALSE(exact_comparison_applies(true, {DType::bf16, DType::bf16}));
}

TEST_CASE("ulp at known points, normal and subnormal") {
    CHECK(ulp(DType::f32, 1.0) == std::ldexp(1.0, -23));
    CHECK(ulp(DType::f32, 1.5) == std::ldexp(1.0, -23));
    CHECK(ulp(DType::f32, -1.0) == std::ldexp(1.0, -23));
    CHECK(ulp(DType::f32, 2.0) == std::ldexp(1.0, -22));
    CHECK(ulp(DType::f32, 0.75) == std::ldexp(1.0, -24));
    CHECK(ulp(DType::f32, 3.0e38) == std::ldexp(1.0, 104));
    CHECK(ulp(DType::f64, 1.0) == std::ldexp(1.0, -52));
    CHECK(ulp(DType::f16, 1.0) == std::ldexp(1.0, -10));
    CHECK(ulp(DType::f16, 1024.0) == 1.0);
    CHECK(ulp(DType::f16, 65504.0) == 32.0);
    CHECK(ulp(DType::bf16, 1.0) == std::ldexp(1.0, -7));
    CHECK(ulp(DType::bf16, 256.0) == 2.0);
    // Subnormals (and zero): the spacing of the subnormal range, the smallest subnormal.
    CHECK(ulp(DType::f16, std::ldexp(1.0, -14)) == std::ldexp(1.0, -24));  // smallest normal
    CHECK(ulp(DType::f16, std::ldexp(1.0, -20)) == std::ldexp(1.0, -24));
    CHECK(ulp(DType::f16, 0.0) == std::ldexp(1.0, -24));
    CHECK(ulp(DType::f32, 1e-40) == std::ldexp(1.0, -149));
    CHECK(ulp(DType::f32, 0.0) == std::ldexp(1.0, -149));
    CHECK(ulp(DType::bf16, 1e-40) == std::ldexp(1.0, -133));
    CHECK(ulp(DType::f64, 0.0) == std::numeric_limits<double>::denorm_min());
}

TEST_CASE("ulp(f32, x) is the distance from x to the next float up, over the whole range") {
    for (float x : {1.0f, 1.1f, 3.0f, 1e-3f, 12345.678f, 1e-38f, 1e-42f, 1.17549435e-38f, 3.0e38f, 0.1f}) {
        CAPTURE(x);
        CHECK(ulp(DType::f32, x) == static_cast<double>(std::nextafter(x, INFINITY)) - static_cast<double>(x));
        CHECK(ulp(DType::f32, -x) == ulp(DType::f32, x));
    }
}

using test::CompressOptions;

// A backend that dequantises into a type D rounds W_f = (W - Z) S only where D lacks the value:
// MXFP4 (E2M1 times a power of two) fits bf16 and f16 unless a scale pushes it out of range,
// FP8 with a power-of-two scale fits them too; u4 with an f16 scale needs up to 4 + 11 bits.
// Where D holds them all the term is u_C (a kernel that scales each group's partial sum rounds
// once more in C), not u_D.
TEST_CASE("compressed weights: the dequantisation term only where D does not hold every value") {
    const ExpertType G2 = ExpertType::gemm2_bias_swiglu_clamp;
    auto compressed = [&](CompressOptions o) {
        Problem p = test::plain_problem(G2, Convention::openvino, 5, 64, 32, 4, 2);
        test::compress_all_weights(p, o);
        validate(p);
        return p;
    };
    CompressOptions mx;
    mx.type = DType::f4e2m1;
    const Problem mxfp4 = compressed(mx);
    for (DType d : {DType::bf16, DType::f16, DType::f32}) {
        CAPTURE(dtype_name(d));
        const CompressedGemms c = compressed_gemms(mxfp4, d);
        CHECK(c.first);
        CHECK(c.down);
        CHECK(c.first_exact);
        CHECK(c.down_exact);
    }
    const Dims d = validate(mxfp4);
    Precision lowp{DType::f32, DType::bf16};
    lowp.dequant = DType::bf16;
    const ToleranceModel m = tolerance_model(lowp, mxfp4, d);
    CHECK(m.stage_coefficient.at("first_acc") == accumulation_factor(d.H + 1, u32) + u32);
    CHECK(m.stage_coefficient.at("down_acc") == accumulation_factor(d.I + 1, u32) + u32);

    // Where D is the wider of the two, its u_D: never more than the term was.
    Precision narrow_compute{DType::bf16, DType::bf16};
    narrow_compute.dequant = DType::f32;
    CHECK(tolerance_model(narrow_compute, mxfp4, d).stage_coefficient.at("first_acc") ==
          accumulation_factor(d.H + 1, ubf16) + 2 * ubf16 + u32);

    // One scale of 2^127 (E8M0 code 254): 6 * 2^127 is past bf16's and f16's largest value.
    Problem huge = mxfp4;
    huge.inputs["weight_1_scale"].data()[0] = 254;
    CHECK(compressed_gemms(huge, DType::bf16).first_exact);
    CHECK_FALSE(compressed_gemms(huge, DType::bf16).down_exact);
    CHECK_FALSE(compressed_gemms(huge, DType::f16).down_exact);
    CHECK(tolerance_model(lowp, huge, d).stage_coefficient.at("down_acc") ==
          accumulation_factor(d.I + 1, u32) + ubf16);

    CompressOptions u4;  // f16 scales from each channel's largest magnitude
    const Problem q = compressed(u4);
    CHECK_FALSE(compressed_gemms(q, DType::bf16).first_exact);
    CHECK_FALSE(compressed_gemms(q, DType::f16).down_exact);
    CHECK(compressed_gemms(q, DType::f32).first_exact);  // 4 + 11 bits fit f32's 24
    CHECK(tolerance_model(lowp, q, d).stage_coefficient.at("first_acc") == accumulation_factor(d.H + 1, u32) + ubf16);

    CompressOptions fp8;
    fp8.type = DType::f8e4m3;
    fp8.scale_type = DType::f32;
    fp8.per_tensor = true;
    Problem unit = compressed(fp8);
    for (const char* s : {"weight_0_scale", "weight_1_scale"})
        for (std::size_t i = 0; i < unit.input(s).size(); ++i) unit.inputs[s].set(i, 0.5);
    CHECK(compressed_gemms(unit, DType::bf16).first_exact);  // E4M3's 4 bits, NaN codes included
    CHECK(compressed_gemms(unit, DType::f16).down_exact);
    CHECK_FALSE(compressed_gemms(compressed(fp8), DType::bf16).first_exact);  // an f32 scale of 24 bits

    // Plain weights: no term at all.
    const Problem plain = test::plain_problem(G2, Convention::openvino, 5, 64, 32, 4, 2);
    CHECK_FALSE(compressed_gemms(plain, DType::bf16).first);
    CHECK(tolerance_model(lowp, plain, d).stage_coefficient.at("first_acc") == accumulation_factor(d.H + 1, u32));
}

// spec/tolerance.md, "Underflow", evaluated here from its definitions on a GEMM2 and a GEMM3
// problem: S_t = sum_k |w_k|, R_1 the largest row sum of |W| of the first GEMM (any output, any
// expert), R_d,n the largest sum of row n of the down weight (any expert), x_t = max |x|,
// h_t = x_t R_1 + max |b_0|, a_t = h_t (h_t + 1), and
//   F_t,n = S_t ( R_d,n ( 2.1 (h_t + 1) e1 + 8 eta_C + eta_M ) + I eta_C + eta_M + I eta_D a_t )
//   e1    = H eta_C + eta_M + H (eta_D + eta_in) x_t + R_1 eta_in
// for f16 compute and storage on f32 data (eta_in = eta_C: inputs rounded to f16; no compressed
// weight: eta_D = 0). Each factor of the floor carries an output's subnormal roundings to it.
TEST_CASE("underflow_floor: the spec's F_t,n for every token and output, f16 compute on f32 data") {
    for (const ExpertType type : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu}) {
        CAPTURE(type);
        const Problem p = test::plain_problem(type, Convention::openvino, 5, 12, 6, 4, 2, DType::f32);
        const Dims d = validate(p);
        const ResolvedParams rp = resolve(p.attributes);
        const bool gemm2 = type == ExpertType::gemm2_bias_swiglu_clamp;
        // row n's sum of |W|, the largest over experts, for every n
        const auto row_sums = [&](const char* name) {
            const Tensor& w = p.input(name);
            const Shape& s = w.shape();
            const bool nk = rp.weight_layout == WeightLayout::NK;
            const std::size_t N = nk ? s[1] : s[2], Kd = nk ? s[2] : s[1];
            std::vector<double> best(N, 0.0);
            for (std::size_t e = 0; e < s[0]; ++e)
                for (std::size_t n = 0; n < N; ++n) {
                    double sum = 0.0;
                    for (std::size_t k = 0; k < Kd; ++k)
                        sum += std::fabs(w.get(nk ? (e * N + n) * Kd + k : (e * Kd + k) * N + n));
                    best[n] = std::max(best[n], sum);
                }
            return best;
        };
        const auto largest = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
        const double R1 = gemm2 ? largest(row_sums(kWeight0))
                                : std::max(largest(row_sums(kWeight0)), largest(row_sums(kWeight1)));
        const std::vector<double> Rd = row_sums(gemm2 ? kWeight1 : kWeight2);
        REQUIRE(Rd.size() == 12);
        double b0 = 0.0;
        if (p.has(kBias0))
            for (std::size_t i = 0; i < p.input(kBias0).size(); ++i) b0 = std::max(b0, std::fabs(p.input(kBias0).get(i)));
        const double eta = std::ldexp(1.0, -25), H = 12.0, I = 6.0;  // f16: half of 2^-24
        const std::vector<double> floor = underflow_floor(p, Precision{DType::f16, DType::f16}, d);
        REQUIRE(floor.size() == 5 * 12);
        const Tensor& x = p.input(kHiddenStates);
        const Tensor& w = p.input(kRoutingWeights);
        for (std::size_t t = 0; t < 5; ++t) {
            double xt = 0.0, St = 0.0;
            for (std::size_t j = 0; j < 12; ++j) xt = std::max(xt, std::fabs(x.get(t * 12 + j)));
            if (rp.routing_layout == RoutingLayout::compact)
                for (std::size_t k = 0; k < 2; ++k) St += std::fabs(w.get(t * 2 + k));
            else
                for (std::size_t e = 0; e < 4; ++e) St += std::fabs(w.get(e * 5 + t));
            const double ht = xt * R1 + b0;
            const double e1 = H * eta + eta + H * eta * xt + R1 * eta;
            for (std::size_t n = 0; n < 12; ++n) {
                const double F = St * (Rd[n] * (2.1 * (ht + 1.0) * e1 + 8.0 * eta + eta) + I * eta + eta);
                CAPTURE(t);
                CAPTURE(n);
                CHECK(floor[t * 12 + n] == doctest::Approx(F).epsilon(1e-12));
            }
        }
        // the rows differ (else a per-token floor would pass this test too)
        CHECK(largest(Rd) > 1.01 * *std::min_element(Rd.begin(), Rd.end()));
    }
}
