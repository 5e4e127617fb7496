#include "moe/conformance/judge.hpp"

#include "moe/conformance/compare.hpp"

#include <cmath>
#include <map>
#include <string>

#include "moe/spec/compression.hpp"
#include "moe/spec/problem.hpp"

namespace moe::conformance {

namespace {

// A returned stage whose shape is not the golden layout [T, K, features]: its description, else
// "". Stages are compared only when the output fails, so without this a misshapen one (a
// transposed buffer, a harness that dropped the K axis) would pass unnoticed until then.
std::string misshapen_stage(const golden::GoldenCase& c, const std::map<std::string, Tensor>& stages) {
    const Dims d = validate_structure(c.problem);
    for (const auto& [name, t] : stages) {
        const auto want = golden_stage_shape(c.problem, d, name);
        if (!want) return name + " (not a stage of " + std::string(expert_type_name(c.problem.attributes.expert_type)) + ")";
        if (t.shape() != *want)
            return name + " (shape " + shape_to_string(t.shape()) + ", expected " + shape_to_string(*want) +
                   " = [T, K, features])";
    }
    return {};
}

// A divergent stage whose every returned value is a value of bf16 (or f16) while most of the
// reference's are not and the declared storage is wider: a kernel that keeps the stage in that
// type but declares f32 storage, whose FAIL otherwise reads as an arithmetic bug. "" otherwise.
std::string narrow_stage_hint(const golden::GoldenCase& c, const Output& out, const std::string& stage,
                              DType storage) {
    const auto got = out.stages.find(stage);
    const auto ref = c.stages.find(stage);
    if (got == out.stages.end() || ref == c.stages.end()) return {};
    for (DType t : {DType::bf16, DType::f16}) {
        if (unit_roundoff(t) <= unit_roundoff(storage)) continue;
        const auto holds = [t](double v) { return round_to(t, v) == v; };
        std::size_t got_values = 0, ref_values = 0, ref_outside = 0;
        bool all_in = true;
        for (std::size_t i = 0; i < got->second.size() && all_in; ++i) {
            const double v = got->second.get(i);
            if (!std::isfinite(v) || v == 0.0) continue;
            ++got_values;
            all_in = holds(v);
        }
        for (std::size_t i = 0; i < ref->second.size(); ++i) {
            const double v = ref->second.get(i);
            if (!std::isfinite(v) || v == 0.0) continue;
            ++ref_values;
            ref_outside += !holds(v);
        }
        // Eight values at least: a handful of small integers fits every type.
        if (all_in && got_values >= 8 && 2 * ref_outside >= ref_values)
        {
            const std::string narrow(dtype_name(t)), declared(dtype_name(storage));
            return "; every value of stage " + stage + " returned is a " + narrow + " value, though storage " +
                   declared + " is declared and most of the reference's are not: a kernel that keeps it in " + narrow +
                   " declares storage " + narrow;
        }
    }
    return {};
}

}  // namespace

std::optional<Shape> golden_stage_shape(const Problem& p, const Dims& d, const std::string& stage) {
    const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    if (stage == "down") return Shape{d.T, d.K, d.H};
    if (stage == "act") return Shape{d.T, d.K, d.I};
    if (gemm2 && stage == "gate_up") return Shape{d.T, d.K, 2 * d.I};
    if (!gemm2 && (stage == "gate" || stage == "up")) return Shape{d.T, d.K, d.I};
    return std::nullopt;
}

CaseResult judge_output(const golden::GoldenCase& c, const Output& out, const JudgeInput& in) {
    CaseResult r;
    // Names and paths come from files: control characters are escaped for every report.
    r.case_name = golden::printable(c.problem.name);
    r.file = golden::printable(in.file);
    r.backend = in.backend;
    r.data_type = std::string(dtype_name(c.problem.input(kHiddenStates).dtype()));
    r.compute_type = std::string(dtype_name(in.precision.compute));
    r.storage_type = std::string(dtype_name(in.precision.storage));
    if (has_compressed_weights(c.problem)) r.dequant_type = std::string(dtype_name(in.precision.dequant_type()));
    r.repro = in.repro;
    Comparison cmp = compare_output(c, out.output, in.precision, in.threads);
    r.status = cmp.status;
    r.reason = cmp.reason;
    r.metrics = std::move(cmp.metrics);
    r.exact = cmp.exact;
    if (r.status == Status::fail && !out.stages.empty()) {
        // The comparison's range check computed the stage error terms already: not again.
        StageCheck sc = check_stages(c, out.stages, in.precision, in.threads,
                                     cmp.stage_terms.empty() ? nullptr : &cmp.stage_terms);
        r.first_divergent_stage = std::move(sc.first);
        // Every returned stage within its bound and the output not: the divergence is after them.
        if (!r.first_divergent_stage) r.stages_within_bound = std::move(sc.per_stage);
        else r.reason += narrow_stage_hint(c, out, r.first_divergent_stage->stage, in.precision.storage);
    }
    if (r.status == Status::pass && !out.stages.empty()) {
        if (const std::string stage = misshapen_stage(c, out.stages); !stage.empty()) {
            r.status = Status::fail;
            r.reason = "the output is within its bound, but stage " + stage + " is not in the golden layout";
            r.first_divergent_stage = StageDivergence{};
            r.first_divergent_stage->stage = stage;
            r.first_divergent_stage->worst_ratio = INFINITY;
        }
    }
    return r;
}

}  // namespace moe::conformance
