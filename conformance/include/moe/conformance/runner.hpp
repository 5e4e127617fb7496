#pragma once
// Runs backends over golden files: read each file once (a bad file is an input error, never
// compared), run every backend on it, compare, apply expectations.
//
// Crash isolation: golden files are untrusted, and a damaged one can crash or hang the HDF5
// library; a backend can crash too. With isolation (the default of run_suite_from_makers),
// files are read and run in a worker process (fork, no exec): the parent only starts workers and
// collects their results. A worker that dies (a signal, an unexpected exit) or goes silent for
// longer than the case timeout (reading one file, or one backend on it) is killed, that file (or
// that backend on it) is reported as ERROR naming the signal or the timeout, and a fresh worker
// goes on with the rest; so the run always finishes and its reports are always written.
// Backends are made inside each worker, never in the parent: a backend that initialises a device
// context (opencl) or thread pools must not do so before a fork.
#include <cstdint>
#include <functional>
#include <memory>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "moe/spec/backend.hpp"
#include "moe/conformance/expectations.hpp"
#include "moe/conformance/results.hpp"

namespace moe::conformance {

struct RunOptions {
    std::vector<std::string> files;    // golden files, in run order
    std::vector<std::string> filters;  // case-name globs; empty = all
    // Only the cases of this expert type (--expert-type); none = all. Case names do not say it.
    std::optional<ExpertType> expert_type;
    std::string tier = "full";         // largest tier to run (a file's `tier` attribute)
    std::vector<Expectation> expectations;
    int threads = 1;
    bool progress = true;              // one line per case on stderr
    std::string repro_command = "moe-conform run";  // extra flags (--expect ...) go here
    // Per backend name, the flags its repro line alone needs, before --backend: its plugin's
    // --backend-lib, the opencl backend's --device (run refuses a plugin left out of --backend,
    // and --device where no opencl backend runs).
    std::map<std::string, std::string> repro_flags;
    std::uint64_t max_memory = 0;      // memory budget of reading one file; 0 = golden::default_max_memory()
    // Whether a file's stored output and error bounds must agree with a recomputation on a sample
    // of tokens (golden/stored_results.hpp); a file where they do not is an input error.
    bool check_stored_results = true;
    bool isolate = true;               // read and run files in worker processes (run_suite_from_makers)
    double case_timeout = 600;         // seconds one file may take to read, or one backend on it; 0 = none
    // With progress: a line on stderr when one step (reading and checking a file, or a backend on
    // it) has run this long, and again as long again: model-sized cases take minutes with nothing
    // else to print. Isolated, the parent says it; in one process, a thread that only prints
    // (none where this is 0 or less).
    double notice_seconds = 30;
};

// What a backend's run() may throw instead of an output, other than a fault of its own (which is
// any other exception: ERROR "backend threw: ..."). The message is the whole reason.
// A case the implementation does not handle, found out only while running it (the Python door's
// moe_conform.Skip raised by the function): SKIP, counted and reported as a supports() refusal.
struct CaseSkipped : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// No answer to judge, for a reason that is the user's to fix, not the backend's (check's replay:
// no result file answers the case): ERROR with this message alone, no "backend threw:".
struct CaseUnanswered : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// --expert-type's (and the Python door's expert_type=) value: gemm2 or gemm3, or the spec's names
// GEMM2_BIAS_SWIGLU_CLAMP and GEMM3_SWIGLU, in any case. Throws InputError naming `option`.
ExpertType expert_type_option(const std::string& text, const std::string& option);

// The repro line of `backend`'s results up to its --backend: the command, then the flags that
// backend needs (o.repro_flags).
std::string repro_prefix(const RunOptions& o, const std::string& backend);

// A backend as an isolated run makes it: by name, made inside each worker process.
using BackendMaker = moe::BackendMaker;

struct RunOutcome {
    std::vector<CaseResult> results;
    std::vector<std::string> input_errors;  // bad files and rejected problems (exit 2)
    std::size_t worker_restarts = 0;        // isolated runs: workers lost to a crash or a timeout
};

// In this process, with backends already made (no isolation).
RunOutcome run_suite(const RunOptions& o, const std::vector<Backend*>& backends);

// Makes the backends where the files are run: in worker processes when o.isolate, else here.
RunOutcome run_suite_from_makers(const RunOptions& o, const std::vector<BackendMaker>& backends);

// The exit code a CI gates on (spec/report-format.md): 2 when a golden file could not be used or
// nothing matched the selection, 1 on a FAIL, ERROR or XPASS (and on a MISTRUSTED when
// fail_on_mistrusted: --fail-on-mistrusted), 77 when every case was skipped, else 0.
int run_exit_code(const RunOutcome& outcome, bool fail_on_mistrusted = false);

}  // namespace moe::conformance
