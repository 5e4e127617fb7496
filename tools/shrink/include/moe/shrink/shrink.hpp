#pragma once
// Shrinking a failing case: smaller sizes (tokens, top-k slots, experts, hidden and intermediate
// features), then simpler values (zeros, powers of two, no biases), by delta debugging, keeping
// only the edits after which the backend still fails the same way. Every candidate is a new
// golden case: its reference outputs, stages and error terms are computed as moe-golden computes
// them, and it stays exact by construction only where the certificate still holds.
//
// The library sees the backend only through an Oracle, a function that runs it on a case and
// says how it fared, so that it links no backend; make_backend_oracle() builds one from the
// contract in moe/spec/backend.hpp. shrink_isolated() runs the oracle in a worker process, so
// that a backend that crashes or hangs on a case is a verdict too, and can be shrunk.
#include <cstddef>
#include <functional>
#include <stdexcept>
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
    // For a run in a worker process (shrink_isolated) that sent no verdict (status ERROR, the
    // reason saying how): the signal that ended the worker (a crash: SIGSEGV, ...), or the
    // seconds after which it was killed (a hang). 0 otherwise.
    int signal = 0;
    double hung_after = 0;
};
using Oracle = std::function<Verdict(const golden::GoldenCase&)>;
// An oracle made where it runs: shrink_isolated calls it once in each worker process, so that
// the backend behind it (a device context, a plugin's state, a thread pool) is made there and
// never crosses a fork.
using OracleMaker = std::function<Oracle()>;

// Runs `backend` on a case as `moe-conform run` does (prepare, run, compare within the bound of
// its declared precision, first divergent stage on failure; an exception is an ERROR).
Oracle make_backend_oracle(Backend& backend, int threads);
// For shrink_isolated: makes the backend (`maker`, moe/spec/backend.hpp), refuses an unavailable
// one (InputError "backend NAME is unavailable: REASON"), and runs it as make_backend_oracle does.
OracleMaker backend_oracle_maker(BackendMaker maker, int threads);

// Whether `candidate` fails the way `original` did: both FAIL with the same first divergent stage
// (or none), both ERROR with the same message once digits are ignored, both crash with the same
// signal, or both hang.
bool same_failure(const Verdict& original, const Verdict& candidate);

// The worker process of shrink_isolated could not make its oracle (the maker threw, crashed or
// did not return within the limit on a run): nothing about the case is known. The message says
// why (the maker's own message when it threw).
class WorkerFailed : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Options {
    int threads = 1;
    std::size_t max_runs = 3000;                     // oracle calls at most
    double max_seconds = 120.0;                      // then stop with the smallest case so far
    std::function<void(const std::string&)> progress;  // one line per accepted edit, if set
    // The smallest failing case so far, after each accepted edit, if set: moe-conform shrink
    // writes it out, so that a backend that crashes (or a kill) later leaves it on disk.
    std::function<void(const golden::GoldenCase&)> accepted;
    // A backend run (the case as given, a candidate, a rerun) still going after this many seconds
    // is taken for a hang (candidate_limit.hpp). 0: the case as given gets max(max_seconds,
    // kMinCandidateSeconds), and every later run default_candidate_seconds() of the time it took.
    // shrink_isolated kills such a run's worker and takes the hang as the run's verdict. In this
    // process (shrink_case) a run cannot be stopped: `overrun` is called, on a watchdog thread,
    // with what was running and the limit, and should end the process; without it, runs are not
    // watched.
    double candidate_seconds = 0;
    std::function<void(const std::string& running, double limit_seconds)> overrun;
    // shrink_case only (a worker's crash is a verdict): a backend run that crashes the process.
    // With `crashed` set, a handler for crash_signals() writes crashed(running,
    // crash_signal_text(signal)) to stderr and ends the process with kExitBackendCrashed
    // (crash_guard.hpp). The text is made before each run, for each signal (a handler can only
    // write what is ready), so it reads only what holds during the run. Without `crashed` no
    // handler is installed (the Python door keeps the interpreter's).
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

// Shrinks `failing`, on which `oracle` must FAIL or ERROR (else InputError), running the oracle
// in this process.
Result shrink_case(const golden::GoldenCase& failing, const Oracle& oracle, const Options& o = {});

// The same search with every run of the oracle in a worker process (fork), made by `make` there:
// a run that crashes the worker (a signal) or does not return within the limit on a run (the
// worker is killed) is an ERROR verdict (Verdict::signal, Verdict::hung_after) like any other, so
// a case that crashes or hangs the backend shrinks to a smaller one that crashes with the same
// signal, or hangs. The worker runs case after case, as shrink_case runs them (a backend's state
// carries from one run to the next); after a crash or a hang the next run starts a new one.
// Throws WorkerFailed when a worker cannot make its oracle, InputError as shrink_case. Call it with
// no other thread running (moe-conform shrink's main thread): fork() copies only the caller's.
Result shrink_isolated(const golden::GoldenCase& failing, const OracleMaker& make, const Options& o = {});

}  // namespace moe::shrink
