#pragma once
// Runs backends over golden files: read each file once (a bad file is an input error, never
// compared), run every backend on it, compare, apply expectations.
#include <cstdint>
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
    std::uint64_t max_memory = 0;      // memory budget of reading one file; 0 = golden::default_max_memory()
    // Whether a file's stored output and error bounds must agree with a recomputation on a sample
    // of tokens (golden/stored_results.hpp); a file where they do not is an input error.
    bool check_stored_results = true;
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
