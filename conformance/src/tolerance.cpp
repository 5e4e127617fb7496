#include "moe/conformance/tolerance.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dequant_exactness.hpp"
#include "moe/spec/compression.hpp"
#include "type_limits.hpp"


namespace moe::conformance {

double accumulation_factor(std::size_t n, double u) {
    const double nd = static_cast<double>(n);
    const double probabilistic = kLambda * std::sqrt(nd) * u;
    const double nu = nd * u;
    const double deterministic = nu < 1.0 ? nu / (1.0 - nu) : std::numeric_limits<double>::infinity();
    return std::min(deterministic, probabilistic);
}

namespace {

int significand_bits(DType t) { return static_cast<int>(std::lround(-std::log2(unit_roundoff(t)))); }

}  // namespace

CompressedGemms compressed_gemms(const Problem& p, DType dequant) {
    auto compressed = [&](const char* w) { return p.has(w) && is_compressed_weight(p.input(w).dtype()); };
    auto exact = [&](const char* w) { return !compressed(w) || dequant_type_holds_weight(p, w, dequant); };
    const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    const char* down = gemm2 ? kWeight1 : kWeight2;
    CompressedGemms c;
    c.first = compressed(kWeight0) || (!gemm2 && compressed(kWeight1));
    c.first_exact = exact(kWeight0) && (gemm2 || exact(kWeight1));
    c.down = compressed(down);
    c.down_exact = exact(down);
    return c;
}

ToleranceModel tolerance_model(const Precision& p, const Problem& problem, const Dims& d) {
    return tolerance_model(p, problem.input(kHiddenStates).dtype(), d, compressed_gemms(problem, p.dequant_type()));
}

ToleranceModel tolerance_model(const Precision& p, DType data, const Dims& d, const CompressedGemms& compressed) {
    const double uc = unit_roundoff(p.compute), um = unit_roundoff(p.storage), ut = unit_roundoff(data);
    // A backend that computes below the data type also rounds its inputs x and W: two more
    // roundings in each product.
    const double input_rounding = uc > ut ? 2.0 * uc : 0.0;
    // A compressed weight rounded once to the dequantisation type D: |dW| <= u_D |W_f|, which the
    // GEMM's |W||x| magnitude (its accumulation term's tensor) already bounds (spec/tolerance.md,
    // "Compressed weights"). Where D holds every value, no rounding to D, but a kernel that scales
    // each group's partial sum rounds once more in C (and declares D = C): the smaller of u_C and
    // u_D, never more than the term was.
    const double ud = unit_roundoff(p.dequant_type());
    const auto dequant_term = [&](bool read, bool exact) { return !read ? 0.0 : exact ? std::min(uc, ud) : ud; };
    ToleranceModel m;
    m.stage_coefficient = {{"first_acc", accumulation_factor(d.H + 1, uc) + input_rounding +
                                             dequant_term(compressed.first, compressed.first_exact)},
                           {"first_store", um},
                           {"act_eval", uc},
                           {"act_store", um},
                           {"down_acc", accumulation_factor(d.I + 1, uc) + input_rounding +
                                            dequant_term(compressed.down, compressed.down_exact)},
                           {"down_store", um}};
    m.output_coefficient = m.stage_coefficient;
    // At the output the down outputs' magnitude sum_k |w_k||y_k| also bounds the top-k
    // reduction: K products and K additions.
    m.output_coefficient["down_store"] = um + accumulation_factor(d.K + 1, uc);
    m.output_rounding = ut;
    m.output_floor = 0.5 * smallest_subnormal(data);
    m.routing_floor = 0.5 * static_cast<double>(d.K) * smallest_subnormal(p.compute);
    return m;
}

bool exact_comparison_applies(bool case_is_exact, const Precision& p, bool intermediates_fit_storage,
                              bool compressed) {
    return case_is_exact && significand_bits(p.compute) >= 24 &&
           (significand_bits(p.storage) >= 24 || intermediates_fit_storage) &&
           (!compressed || significand_bits(p.dequant_type()) >= 24);
}

double ulp(DType t, double v) {
    const double a = std::fabs(v);
    const int p = significand_bits(t);
    int e;
    std::frexp(a, &e);  // a in [2^(e-1), 2^e)
    double min_normal_exp;
    switch (t) {
        case DType::f64: min_normal_exp = -1022; break;
        case DType::f32: min_normal_exp = -126; break;
        case DType::f16: min_normal_exp = -14; break;
        case DType::bf16: min_normal_exp = -126; break;
        default: min_normal_exp = -1022;
    }
    const int exp = a == 0.0 ? static_cast<int>(min_normal_exp) : std::max(e - 1, static_cast<int>(min_normal_exp));
    return std::ldexp(1.0, exp - (p - 1));
}

}  // namespace moe::conformance
