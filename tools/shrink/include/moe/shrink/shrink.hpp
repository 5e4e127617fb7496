#pragma once
// Shrinking a failing case: smaller sizes (tokens, top-k slots, experts, hidden and intermediate
// features), then simpler values (zeros, powers of two, no biases), by delta debugging, keeping
// only the edits after which the backend still fails the same way. Every candidate is a new
// golden case: its reference outputs, stages and error terms are computed as moe-golden computes
// them, and it stays exact by construction only where the certificate still holds.
//
// The library sees the backend only through an Oracle, a function that runs it on a case and
// says how it fared, so that it links no backend; make_backend_oracle() builds one from the
// contract in moe/spec/backend.hpp.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "moe/conformance/results.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/shrink/problem_edits.hpp"
#include "moe/spec/backend.hpp"

namespace moe::shrink {

// How a backend fared on a case: the runner's status and, for a FAIL, the first stage that
// diverges (empty when the backend returns no stages or only the output leaves its bound); for an
// ERROR, the message.
struct Verdict {
    conformance::Status status = conformance::Status::pass;
    std::string stage;
    std::string reason;
};
using Oracle = std::function<Verdict(const golden::GoldenCase&)>;

// Runs `backend` on a case as `moe-conform run` does (prepare, run, compare within the bound of
// its declared precision, first divergent stage on failure; an exception is an ERROR).
Oracle make_backend_oracle(Backend& backend, int threads);

// Whether `candidate` fails the way `original` did: both FAIL with the same first divergent stage
// (or none), or both ERROR with the same message once digits are ignored.
bool same_failure(const Verdict& original, const Verdict& candidate);

struct Options {
    int threads = 1;
    std::size_t max_runs = 3000;                     // oracle calls at most
    double max_seconds = 120.0;                      // then stop with the smallest case so far
    std::function<void(const std::string&)> progress;  // one line per accepted edit, if set
    // The smallest failing case so far, after each accepted edit, if set: moe-conform shrink
    // writes it out, so that a backend that crashes (or a kill) later leaves it on disk.
    std::function<void(const golden::GoldenCase&)> accepted;
    // A backend run (the case as given, a candidate, a rerun) still going after this many seconds
    // is taken for a hang: `overrun` is called, on a watchdog thread, with what was running and
    // the limit (candidate_limit.hpp); it should end the process, since the run cannot be stopped.
    // 0: the case as given gets max(max_seconds, kMinCandidateSeconds), and every later run
    // default_candidate_seconds() of the time it took. Without `overrun`, runs are not watched.
    double candidate_seconds = 0;
    std::function<void(const std::string& running, double limit_seconds)> overrun;
    // A backend run (as for `overrun`) that crashes the process: with `crashed` set, a handler for
    // crash_signals() writes crashed(running, crash_signal_text(signal)) to stderr and ends the
    // process with kExitBackendCrashed (crash_guard.hpp). The text is made before each run, for
    // each signal (a handler can only write what is ready), so it reads only what holds during
    // the run. Without `crashed` no handler is installed (the Python door keeps the interpreter's).
    std::function<std::string(const std::string& running, const std::string& signal_text)> crashed;
};

struct Result {
    golden::GoldenCase shrunk;  // the smallest case that still fails the same way
    Verdict verdict;            // the backend's verdict on it
    ProblemSize before, after;
    std::size_t runs = 0;       // oracle calls made
    std::vector<std::string> edits;  // the accepted edits, in order
    bool stable = true;         // two more runs on the shrunk case failed the same way
    // Empty when the search ran to its end; else what stopped it (max_runs or max_seconds): some
    // edits were never tried, so the case may not be as small as it could be.
    std::string limit;
    double candidate_seconds = 0;  // the limit on each run after the first (Options::candidate_seconds)
};

// A candidate must also remain a meaningful comparison: one whose reference output is mostly
// zeros (conformance::vacuous_case) is not kept unless the original already was.
//
// The case rebuilt for a problem: reference output, stages and error terms; `exact` kept when
// `original` was exact and the f32 certificate holds. Throws InputError for an invalid problem.
golden::GoldenCase rebuild_case(const Problem& p, const golden::GoldenCase& original, int threads);

// Shrinks `failing`, on which `oracle` must FAIL or ERROR (else InputError).
Result shrink_case(const golden::GoldenCase& failing, const Oracle& oracle, const Options& o = {});

}  // namespace moe::shrink
