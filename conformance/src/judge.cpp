#include "moe/conformance/judge.hpp"

#include "moe/conformance/compare.hpp"

namespace moe::conformance {

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
    return r;
}

}  // namespace moe::conformance
