#include "moe/conformance/judge.hpp"

#include "moe/conformance/compare.hpp"

#include <cmath>
#include <map>
#include <string>

#include "moe/spec/problem.hpp"

namespace moe::conformance {

namespace {

// A returned stage whose shape is not the golden layout [T, K, features]: its description, else
// "". Stages are compared only when the output fails, so without this a misshapen one (a
// transposed buffer, a harness that dropped the K axis) would pass unnoticed until then.
std::string misshapen_stage(const golden::GoldenCase& c, const std::map<std::string, Tensor>& stages) {
    const Dims d = validate_structure(c.problem);
    const ExpertType type = c.problem.attributes.expert_type;
    for (const auto& [name, t] : stages) {
        const std::size_t features = name == "down" ? d.H : name == "gate_up" ? d.first_gemm_width(type) : d.I;
        const Shape want{d.T, d.K, features};
        if (t.shape() != want)
            return name + " (shape " + shape_to_string(t.shape()) + ", expected " + shape_to_string(want) +
                   " = [T, K, features])";
    }
    return {};
}

}  // namespace

CaseResult judge_output(const golden::GoldenCase& c, const Output& out, const JudgeInput& in) {
    CaseResult r;
    // Names and paths come from files: control characters are escaped for every report.
    r.case_name = golden::printable(c.problem.name);
    r.file = golden::printable(in.file);
    r.backend = in.backend;
    r.data_type = std::string(dtype_name(c.problem.input(kHiddenStates).dtype()));
    r.compute_type = std::string(dtype_name(in.precision.compute));
    r.storage_type = std::string(dtype_name(in.precision.storage));
    r.repro = in.repro;
    Comparison cmp = compare_output(c, out.output, in.precision, in.threads);
    r.status = cmp.status;
    r.reason = cmp.reason;
    r.metrics = std::move(cmp.metrics);
    r.exact = cmp.exact;
    if (r.status == Status::fail && !out.stages.empty())
        r.first_divergent_stage = first_divergent_stage(c, out.stages, in.precision, in.threads);
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
