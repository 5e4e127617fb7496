#pragma once
// Crash isolation for the runner (runner.hpp): files read and run in worker processes, results
// sent back over a pipe, crashes and timeouts turned into ERROR results. Internal to
// moe_conformance.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "moe/conformance/runner.hpp"
#include "moe/golden/golden_file.hpp"

namespace moe::conformance::detail {

// What a worker does with one file, supplied by the runner.
struct CaseSteps {
    // Reads, validates and selects a file: nullopt with the reason in `error` (empty when the
    // tier or the filters leave it out).
    std::function<std::optional<golden::GoldenCase>(const std::string& file, std::string& error)> load;
    // One backend on the case (which it may read again from its file: see runner.cpp).
    std::function<CaseResult(golden::GoldenCase& c, const std::string& file, Backend& b)> run;
    // Called with the 1-based file number of each result, in the process that has the result.
    std::function<void(std::size_t n, const CaseResult& r)> progress;
};

RunOutcome run_in_workers(const RunOptions& o, const std::vector<BackendMaker>& makers, const CaseSteps& steps);

}  // namespace moe::conformance::detail
