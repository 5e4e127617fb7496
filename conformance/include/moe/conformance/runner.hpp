#pragma once
// Runs backends over golden files: read each file once (a bad file is an input error, never
// compared), run every backend on it, compare, apply expectations.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "moe/spec/backend.hpp"
#include "moe/conformance/expectations.hpp"
#include "moe/conformance/results.hpp"

namespace moe::conformance {

struct RunOptions {
    std::vector<std::string> files;    // golden files, in run order
    std::vector<std::string> filters;  // case-name globs; empty = all
    std::string tier = "full";         // largest tier to run (a file's `tier` attribute)
    std::vector<Expectation> expectations;
    int threads = 1;
    bool progress = true;              // one line per case on stderr
    std::string repro_command = "moe-conform run";  // extra flags (--device ...) go here
};

struct RunOutcome {
    std::vector<CaseResult> results;
    std::vector<std::string> input_errors;  // bad files and rejected problems (exit 2)
};

RunOutcome run_suite(const RunOptions& o, const std::vector<Backend*>& backends);

// The exit code a CI gates on (spec/report-format.md): 2 when a golden file could not be used or
// nothing matched the selection, 1 on a FAIL, ERROR or XPASS, 77 when every case was skipped, else 0.
int run_exit_code(const RunOutcome& outcome);

}  // namespace moe::conformance
