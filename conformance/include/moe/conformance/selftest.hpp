#pragma once
// The selftest's verdict: the suite must pass every correct backend and catch every deliberately
// broken one (a mutant is caught when at least one case FAILs or ERRORs on it). A backend or
// mutant that cannot run here (no device) is reported as skipped, with the reason, and does not
// count either way.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "moe/conformance/runner.hpp"
#include "moe/spec/backend.hpp"
#include "moe/spec/mutant.hpp"

namespace moe::conformance {

struct CorrectBackendVerdict {
    std::string name;
    std::optional<std::string> unavailable;  // why it could not run; nothing was compared
    RunSummary summary;
    double worst_ratio = 0;                  // the largest error/bound over its cases
    std::vector<CaseResult> problems;        // results that are neither PASS nor SKIP
    bool clean() const { return !unavailable && problems.empty(); }
};

struct MutantVerdict {
    std::string name, family, description;
    std::optional<std::string> unavailable;  // why it could not run: SKIPPED
    std::size_t caught_by = 0;               // cases that FAIL or ERROR on it
    std::size_t cases = 0;
    std::optional<CaseResult> first_catch;   // the first of them, in run order
    bool caught() const { return caught_by > 0; }
};

struct SelftestReport {
    std::vector<CorrectBackendVerdict> correct;
    std::vector<MutantVerdict> mutants;
    std::vector<std::string> input_errors;  // the suite itself is unusable (exit 2)
    std::size_t runnable_mutants() const;
    std::size_t caught_mutants() const;
    // Every runnable mutant caught and every available correct backend clean.
    bool passed() const;
};

// Runs `correct` and `mutants` over the files of `o`. Stops at the first input error (a bad
// golden file makes every verdict meaningless).
SelftestReport run_selftest(const RunOptions& o, const std::vector<Backend*>& correct,
                            const std::vector<Mutant>& mutants);

}  // namespace moe::conformance
