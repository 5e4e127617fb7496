#pragma once
// The subcommands of moe-conform. Each returns the process exit code (spec/report-format.md):
// 0 every case has its expected status, 1 a FAIL/ERROR/XPASS (selftest: a mutant escaped or a
// correct backend failed), 2 usage or input error, 77 nothing compared (all skipped).
#include <cstdint>
#include <string>
#include <vector>

#include "moe/conformance/reports.hpp"
#include "moe/conformance/runner.hpp"

namespace moe::conform_cli {

// What run and check share: which cases, how they run, what is printed.
struct SuiteRunFlags {
    std::vector<std::string> filters;
    std::string expert_type;            // --expert-type, as the spec names it (GEMM3_SWIGLU); "" = every type
    std::string tier = "full";
    int threads = 1;
    bool quiet = false;
    bool trust_stored_results = false;  // --trust-stored-results: no recomputation of stored results
    bool no_isolation = false;          // --no-isolation: read and run in this process (debugging)
    double case_timeout = 600;          // --case-timeout: seconds per file read, or per backend on a file
    std::uint64_t max_memory = 0;       // --max-memory: bytes one golden file may need once read; 0 = default
    // --expect FILE: known failures (XFAIL) and skips. Shared, so that check gates result files
    // exactly as run gates a backend: one loader, one format, the same statuses and exit codes.
    std::string expect;
    // --fail-on-mistrusted: a MISTRUSTED result fails the run (exit 1) and the reports say so, for
    // a CI that must not accept a pass the suite cannot tell from a wrong answer.
    bool fail_on_mistrusted = false;
    // What the repro lines run: moe-conform as it was invoked (moe::cli::rerun_tool).
    std::string tool = "moe-conform";
};
// The runner's options for `files` under these flags (the expectations loaded, and --expect on
// the repro lines: an XFAIL or XPASS is one only against the file).
conformance::RunOptions run_options(const SuiteRunFlags& f, std::vector<std::string> files);
// After the run, before the report: the entries of --expect that applied to no result, said (not
// refused: a shard or a --filter covers part of what the file lists). Nothing without --expect.
void note_unused_expectations(const SuiteRunFlags& f, const conformance::RunOptions& o,
                              const conformance::RunOutcome& outcome, const std::string& shard);

struct RunCommand : SuiteRunFlags {
    std::vector<std::string> backends;
    std::vector<std::string> backend_libs;  // --backend-lib: plugins (moe_conform/backend_abi.h)
    std::string suite;
    std::vector<std::string> cases;
    std::string json, junit, html;
    std::string device;  // --device: the OpenCL device ("P:D" or a name substring)
    bool no_manifest = false;        // --no-manifest: do not check the suite's MANIFEST.sha256
    std::string write_results;       // --write-results DIR: every output also as a result file
    std::string shard;               // --shard I/N: this share of the cases
    std::string command_line;
};
int run(const RunCommand& c);

struct CheckCommand : SuiteRunFlags {
    std::string suite;
    std::vector<std::string> cases;
    std::vector<std::string> results;  // result files (.h5, .npy) or one folder of them
    std::string precision;             // --precision C[/S]: overrides or supplies the files' own
    std::string name;                  // --name: the implementation's name in reports
    std::string json, junit, html;
    bool no_manifest = false;
    std::string shard;                 // --shard I/N
    std::string command_line;
};
int check(const CheckCommand& c);

// The header of a run's reports, and what run and check print, write and return at the end.
struct ReportFiles {
    std::string json, junit, html;
};
// The header, with the flags' tier and whether MISTRUSTED fails the run (report_outcome's exit
// code and every report follow it from here).
conformance::RunInfo make_run_info(const std::string& command_line, const std::vector<std::string>& backends,
                                   const std::string& suite, const SuiteRunFlags& flags);
int report_outcome(const conformance::RunInfo& info, const conformance::RunOutcome& outcome, const ReportFiles& files);
// A shard with none of the selected cases: its report files hold no result (a CI collecting one
// report per shard finds every one), exit 77.
int report_empty_shard(const conformance::RunInfo& info, const ReportFiles& files);

// Every --case file of run, check and shrink exists and is no folder (moe::shrink::check_case_exists):
// each one that is not is printed ("no case G.h5 in the suite DIR (...); did you mean DIR/C.h5?"
// where its folder has a manifest), and the answer is false. Not CLI11's ExistingFile, whose
// "File does not exist" named no suite and no close name.
bool cases_exist(const std::vector<std::string>& cases, const char* tool);

// The suite folder's MANIFEST.sha256, where there is one, must name every *.h5 file with its
// digest; for --case files, their folder's manifest where it lists them. Prints each problem and
// returns false on any.
bool manifest_agrees(const std::string& suite, const std::vector<std::string>& cases, const char* tool);

int list(const std::vector<std::string>& backend_libs, const std::string& json);

struct SelftestCommand {
    std::string suite;
    int threads = 1;
    bool no_manifest = false;
    std::string shard;  // --shard I/N: this share of the correct backends and mutants
    std::vector<std::string> families;  // --family: only these backend families' correct backends and mutants
    std::string device;                 // --device: the opencl backend's and its mutants' device
    std::string json;  // --json: the score and the catch matrix (spec/report-format.md)
    std::string html;  // --html: the same as one page
    bool quiet = false;  // --quiet: no line per backend and mutant on stderr
    std::string command_line;
    std::string tool = "moe-conform";  // what the repro lines run (moe::cli::rerun_tool)
};
int selftest(const SelftestCommand& c);

struct ShrinkCommand {
    std::string backend;      // a built-in backend or a selftest mutant (mutant:NAME or NAME)
    std::string backend_lib;  // or a plugin (its own name: --backend may be left out)
    std::string case_file;    // the failing golden case
    std::string out;          // the shrunk golden case (default: <case>_shrunk.h5 here)
    std::string device;       // --device, as for run
    int threads = 1;
    double max_seconds = 120;
    double candidate_seconds = 0;  // --candidate-seconds: a backend run past it is a hang; 0 = derived
    bool no_manifest = false;      // --no-manifest: do not check --case against its folder's manifest
    bool quiet = false;
    std::string tool = "moe-conform";  // what the repro line runs (moe::cli::rerun_tool)
};
// 0 shrunk and written, 1 the case does not fail on the backend, 2 usage or input error, and
// shrink's own code 4 (moe/shrink/shrink_file.hpp): not deterministic. A crash or hang is a verdict
// of the worker's run (shrink_isolated), not an exit code.
int shrink(const ShrinkCommand& c);

// The golden files among `files` that --filter, --expert-type and --tier select (from their root attributes
// alone), then --shard I/N of those: the shares divide the cases the run selects, so each holds
// some while N does not exceed their number. `selected`: how many the filters and tier kept.
struct Selection {
    std::vector<std::string> files;
    std::size_t selected = 0;
    // A shard left with none of the selected cases (N above their number): nothing to compare
    // here, exit 77 (CTest's "Not Run" for moe_conform_add_suite), not an error.
    bool empty_shard() const { return files.empty() && selected > 0; }
};
Selection selected_files(const std::vector<std::string>& files, const SuiteRunFlags& flags, const std::string& shard);

// --case naming one file twice (under any spelling of its path): InputError, exit 2. Its results
// would be reported twice, and JUnit would hold two test cases of one name.
void refuse_repeated_cases(const std::vector<std::string>& cases);

}  // namespace moe::conform_cli
