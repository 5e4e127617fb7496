#pragma once
// `moe-conform run --write-results DIR`: every output a backend computes is also written as a
// result file (spec/results-format.md), so that the same outputs can be judged again later with
// `moe-conform check`, kept as CI artifacts, or compared across machines.
#include <memory>
#include <string>
#include <vector>

#include "moe/golden/suite.hpp"
#include "moe/spec/backend.hpp"

namespace moe::conformance {

// Wraps `inner`: run() returns its output unchanged and writes it to dir/<case>.h5, naming the
// golden file it answers by the SHA-256 in `cases`.
std::unique_ptr<Backend> record_results(std::unique_ptr<Backend> inner, std::string dir,
                                        std::vector<golden::CaseIdentity> cases);

}  // namespace moe::conformance
