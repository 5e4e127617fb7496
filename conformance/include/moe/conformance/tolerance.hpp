#pragma once
// The tolerance policy of spec/tolerance.md: every element's bound is
//   sum over error terms of coefficient(term) * magnitude(term) + u_out |ref| + floor_out
// where the magnitudes come from the golden file (/outputs/bound_<term>, computed by the
// reference's error analysis) and the coefficients from the backend's declared precision.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "moe/spec/backend.hpp"
#include "moe/spec/problem.hpp"

namespace moe::conformance {

// Higham-Mary probabilistic bound lambda: a length-n sum's rounding error exceeds
// lambda sqrt(n) u (to first order) with probability below 2 exp(-lambda^2 / 2) = 3e-8.
inline constexpr double kLambda = 6.0;

// Bound on the relative rounding error of a length-n sum in unit roundoff u: the smaller of
// Higham's deterministic gamma_n = n u / (1 - n u) and the probabilistic lambda sqrt(n) u.
double accumulation_factor(std::size_t n, double u);

struct ToleranceModel {
    std::map<std::string, double> stage_coefficient;   // per term, for the stages
    std::map<std::string, double> output_coefficient;  // per term, at the output
    double output_rounding = 0;  // u of the output type, times |ref|
    double output_floor = 0;     // half the smallest subnormal of the output type (absolute)
    // K products of the routing sum, each of which may round to the compute type's subnormal
    // grid when a routing weight is tiny: K times half the compute type's smallest subnormal.
    double routing_floor = 0;
};

// Which GEMMs read compressed weights (spec/compressed.md), and whether the backend's
// dequantisation type D holds every value of them. Rounding W_f to D adds u_D to that GEMM's
// accumulation term; where D holds them all (MXFP4 in bf16 or f16: E2M1 values times powers of
// two) it rounds nothing, and the term is min(u_C, u_D), for a kernel that scales each group's
// partial sum (which declares D = C).
struct CompressedGemms {
    bool first = false;  // weight_0 (GEMM3: weight_0 or weight_1)
    bool down = false;   // GEMM2: weight_1; GEMM3: weight_2
    bool first_exact = false, down_exact = false;  // D holds every value of those weights
};
CompressedGemms compressed_gemms(const Problem& p, DType dequant);

// Per output element (token t, output n; [T * H], t major), the absolute error that rounding in
// the subnormal ranges of the compute, storage and dequantisation types can add to it: products
// and stored values that underflow round absolutely (at most half the type's smallest subnormal),
// which the relative terms do not cover. Bounded from the inputs alone: the first GEMM's largest
// row sum of |W|, the down GEMM's row n's (largest over experts), max |x|, sum |w|
// (spec/tolerance.md, "Underflow"). Negligible unless the data spans most of a type's range.
std::vector<double> underflow_floor(const Problem& p, const Precision& prec, const Dims& d);

// Why the case lies beyond the range of a type the backend declares, or nothing: a dequantised
// weight, a partial sum of a GEMM or of the routing sum, or a stage value past the largest finite
// value of the type it is computed or stored in (spec/tolerance.md). Runs the error analysis: for
// the rare comparison that found non-finite outputs where the reference is finite.
// `stage_terms`, when given, receives the analysis's stage terms (reference::error_terms(p, true,
// ...).stages) if the check got as far as computing them, for a caller that needs them next
// (first_divergent_stage), so that a failing comparison runs the error analysis once.
std::optional<std::string> beyond_declared_range(const Problem& p, const Precision& prec, int threads,
                                                 std::map<std::string, Tensor>* stage_terms = nullptr);

// The coefficients for a backend that computes a case of `data` type with precision `p`.
ToleranceModel tolerance_model(const Precision& p, DType data, const Dims& d, const CompressedGemms& compressed = {});
// The same for a validated problem: its data type and its compressed weights.
ToleranceModel tolerance_model(const Precision& p, const Problem& problem, const Dims& d);

// An exact-by-construction case is compared with a zero tolerance (got == the reference rounded
// to the output type) when the backend's compute type has at least f32's 24 significand bits,
// which the case's certificate assumes, and its storage type either has them too or loses
// nothing on the case: it holds every intermediate exactly, or the case is a storage-rounding
// case for it (intermediates_fit_storage; storage_loses_nothing, exact_storage.hpp). A case with
// compressed weights also needs the dequantisation type to have 24 bits (its certificate holds
// for W_f exact in f32).
bool exact_comparison_applies(bool case_is_exact, const Precision& p, bool intermediates_fit_storage = false,
                              bool compressed = false);

// Units in the last place of `t` at magnitude |v| (the spacing of t's values around v).
double ulp(DType t, double v);

}  // namespace moe::conformance
