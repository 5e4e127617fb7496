#pragma once
// The selftest's verdict: the suite must pass every correct backend and catch every deliberately
// broken one (a mutant is caught when at least one case FAILs or ERRORs on it). A backend or
// mutant that cannot run here (no device) is reported as skipped, with the reason, and does not
// count either way.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "moe/conformance/reports.hpp"
#include "moe/conformance/runner.hpp"
#include "moe/spec/backend.hpp"
#include "moe/spec/mutant.hpp"

namespace moe::conformance {

// One cell of the catch matrix: a backend's (or mutant's) status on one case.
struct MatrixCell {
    std::string case_name;
    Status status = Status::pass;
    double worst_ratio = 0;  // the largest error/bound of the case (inf: zero tolerance broken)
};

struct CorrectBackendVerdict {
    std::string name;
    std::optional<std::string> unavailable;  // why it could not run; nothing was compared
    RunSummary summary;
    double worst_ratio = 0;                  // the largest error/bound over its cases
    std::vector<CaseResult> problems;        // results that are neither PASS nor SKIP
    std::vector<MatrixCell> cells;           // every case, in run order
    bool clean() const { return !unavailable && problems.empty(); }
};

struct MutantVerdict {
    std::string name, family, description;
    std::optional<std::string> unavailable;  // why it could not run: SKIPPED
    std::size_t caught_by = 0;               // cases that FAIL or ERROR on it
    std::size_t cases = 0;
    std::optional<CaseResult> first_catch;   // the first of them, in run order
    std::vector<MatrixCell> cells;           // every case, in run order: its row of the catch matrix
    bool caught() const { return caught_by > 0; }
};

struct SelftestReport {
    std::vector<CorrectBackendVerdict> correct;
    std::vector<MutantVerdict> mutants;
    std::vector<std::string> input_errors;  // the suite itself is unusable (exit 2)
    std::vector<std::string> cases;         // the catch matrix's columns: case names in run order
    std::size_t runnable_mutants() const;
    std::size_t caught_mutants() const;
    // The mutation score: caught / runnable mutants (0 when none could run).
    double mutation_score() const;
    // Every runnable mutant caught and every available correct backend clean.
    bool passed() const;
};

// Called after each correct backend and each mutant: how many of the total are done, and the
// report so far (its last verdict is the one just made). A whole-suite pass per backend can take
// minutes on a device whose programs compile slowly; the tool prints a line per call.
using SelftestProgress = std::function<void(std::size_t done, std::size_t total, const SelftestReport& so_far)>;

// Runs `correct` and `mutants` over the files of `o`. Stops at the first input error (a bad
// golden file makes every verdict meaningless).
SelftestReport run_selftest(const RunOptions& o, const std::vector<Backend*>& correct,
                            const std::vector<Mutant>& mutants, const SelftestProgress& progress = {});

// The selftest as JSON (spec/report-format.md, "Selftest JSON"; schema spec/selftest.schema.json):
// the score, the verdicts and the catch matrix (every mutant's and correct backend's status on
// every case). Written atomically to `file`.
void write_selftest_json(const std::string& file, const RunInfo& info, const SelftestReport& report);

// The selftest as one self-contained HTML page: the score, the verdicts, and the catch matrix as
// coloured cells (mutants and correct backends by cases). Written atomically to `file`.
void write_selftest_html(const std::string& file, const RunInfo& info, const SelftestReport& report);

}  // namespace moe::conformance
