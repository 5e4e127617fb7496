#pragma once
// The one comparison engine: a backend's output (and stages) against a golden case.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "moe/spec/backend.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/conformance/results.hpp"
#include "moe/conformance/tolerance.hpp"

namespace moe::conformance {

struct Comparison {
    Status status = Status::pass;  // pass, fail or mistrusted
    std::string reason;
    Metrics metrics;
    bool exact = false;
    // A failing comparison's stage error terms (reference::error_terms(p, true, ...).stages),
    // computed by its range check (beyond_declared_range), for first_divergent_stage to reuse;
    // empty for any other status.
    std::map<std::string, Tensor> stage_terms;
};

// The magnitudes of the error terms at the output: the file's /outputs/bound_<term>, or, for a
// file without them, computed by the reference's error analysis.
std::map<std::string, Tensor> output_error_terms(const golden::GoldenCase& c, int threads);

// Element by element against /outputs/output:
//  - finite reference: |got - ref| <= bound (zero-tolerance cases: got == ref rounded to the
//    output type);
//  - non-finite reference, or an element where /outputs/output_dense differs: got must have the
//    class (finite, NaN, +Inf, -Inf) of one of the readings, and be within bound when finite and
//    the sparse reading is finite.
Comparison compare_output(const golden::GoldenCase& c, const Tensor& got, const Precision& precision,
                          int threads);

// Why a passing comparison says nothing (mostly-zero output, saturated activation), if it does not.
std::optional<std::string> vacuous_case(const golden::GoldenCase& c);
// The same for the backend's own output: 90 % or more of it zero or not finite (a dense
// backend's all-NaN output where the dense reading is NaN everywhere) passes whatever it computed.
std::optional<std::string> vacuous_output(const Tensor& got);

// The first stage, in pipeline order, whose values leave their bounds (stage bounds from the
// reference's error analysis, spec/tolerance.md). `stage_terms`: that analysis's stage terms
// where the caller has them (a failing Comparison's), else computed here.
std::optional<StageDivergence> first_divergent_stage(const golden::GoldenCase& c,
                                                     const std::map<std::string, Tensor>& got_stages,
                                                     const Precision& precision, int threads,
                                                     const std::map<std::string, Tensor>* stage_terms = nullptr);

// The same comparison, keeping every compared stage's worst error/bound (pipeline order) also
// when none leaves its bound: for a failing output that says the error enters after the last
// stage, which an empty first_divergent_stage cannot tell from "no stage compared".
struct StageCheck {
    std::optional<StageDivergence> first;                     // as first_divergent_stage
    std::vector<std::pair<std::string, double>> per_stage;  // every stage compared
};
StageCheck check_stages(const golden::GoldenCase& c, const std::map<std::string, Tensor>& got_stages,
                        const Precision& precision, int threads,
                        const std::map<std::string, Tensor>* stage_terms = nullptr);

}  // namespace moe::conformance
