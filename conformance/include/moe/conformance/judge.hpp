#pragma once
// One output judged against its golden case: the comparison, the first divergent stage of a
// failing output that came with stages, and the result record every report prints. The runner,
// `moe-conform check` and the Python package all judge through this, so that one output gets
// the same verdict and the same numbers whichever way it arrived.
#include <optional>
#include <string>

#include "moe/conformance/results.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/spec/backend.hpp"

namespace moe::conformance {

struct JudgeInput {
    std::string file;     // the golden file (for the report and the repro line)
    std::string backend;  // the implementation's name
    Precision precision;  // what it declared for the case's data type
    std::string repro;    // command line that reruns exactly this case
    int threads = 1;
};

CaseResult judge_output(const golden::GoldenCase& c, const Output& out, const JudgeInput& in);

// The golden layout of stage `stage` of `p` (sizes `d`): [T, K, features]; nullopt when the
// expert type has no such stage.
std::optional<Shape> golden_stage_shape(const Problem& p, const Dims& d, const std::string& stage);

}  // namespace moe::conformance
