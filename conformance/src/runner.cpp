#include "moe/conformance/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <system_error>

#include "case_worker.hpp"
#include "input_digest.hpp"
#include "moe/conformance/compare.hpp"
#include "moe/conformance/judge.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/golden/stored_results.hpp"
#include "moe/conformance/shell_word.hpp"
#include "moe/conformance/step_timer.hpp"
#include "moe/golden/suite.hpp"
#include "moe/spec/compression.hpp"
#include "moe/spec/error.hpp"
#include "moe/spec/stdout_to_stderr.hpp"

namespace moe::conformance {

namespace fs = std::filesystem;

ExpertType expert_type_option(const std::string& text, const std::string& option) {
    std::string upper;  // the spec's names, any case, or their short forms gemm2 and gemm3
    for (const char ch : text) upper += static_cast<char>(ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch);
    if (upper == "GEMM2") return ExpertType::gemm2_bias_swiglu_clamp;
    if (upper == "GEMM3") return ExpertType::gemm3_swiglu;
    try {
        return parse_expert_type(upper);
    } catch (const InputError&) {
        throw InputError(option + " '" + golden::printable(text) +
                         "': expected gemm2 (GEMM2_BIAS_SWIGLU_CLAMP) or gemm3 (GEMM3_SWIGLU)");
    }
}

std::string repro_prefix(const RunOptions& o, const std::string& backend) {
    const auto it = o.repro_flags.find(backend);
    return o.repro_command + (it == o.repro_flags.end() ? "" : it->second);
}

namespace {

std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

// One backend on one case. `inputs_written`: the backend changed the case's inputs (input_digest.hpp).
CaseResult run_one(const golden::GoldenCase& c, const std::string& file, Backend& b, const RunOptions& o,
                   bool& inputs_written) {
    inputs_written = false;
    CaseResult r;
    // Names and paths come from files: control characters are escaped for every report.
    r.case_name = golden::printable(c.problem.name);
    r.file = golden::printable(file);
    r.backend = b.name();
    // Every result of a read case carries them, a SKIP or ERROR included (load_case validated
    // the attributes, so resolve() does not throw here).
    r.params = case_params(c.problem.attributes);
    const DType data = c.problem.input(kHiddenStates).dtype();
    r.data_type = std::string(dtype_name(data));
    r.repro = repro_prefix(o, b.name()) + " --backend " + shell_word(b.name()) + " --case " + shell_word(file);  // the real path

    const Expectation* expected = find_expectation(o.expectations, r.backend, r.case_name);
    if (expected) r.ticket = expected->ticket;
    if (expected && expected->status == Status::skip) {
        r.status = Status::skip;
        r.reason = "expectation file: " + expected->reason;
        return r;
    }
    const auto avail = b.availability();
    if (!avail.available) {
        r.status = Status::skip;
        r.reason = "backend unavailable: " + avail.reason;
        return r;
    }
    const auto support = b.supports(c.problem);
    if (!support.supported) {
        r.status = Status::skip;
        r.reason = "not supported: " + support.reason;
        return r;
    }
    const Precision precision = b.precision_for(c.problem);
    r.compute_type = std::string(dtype_name(precision.compute));
    r.storage_type = std::string(dtype_name(precision.storage));
    if (has_compressed_weights(c.problem)) r.dequant_type = std::string(dtype_name(precision.dequant_type()));

    Output out;
    const InputDigest before = digest_inputs(c.problem);
    // The reported seconds are run()'s alone: prepare() does the per-weights work a deployment
    // does once (packing, dequantising), as the plugin ABI documents.
    auto start = std::chrono::steady_clock::now();
    std::string threw;
    // CaseSkipped and CaseUnanswered (runner.hpp) are not the backend's faults, and BackendFailed
    // is a fault in the backend's own words (a plugin's return code): their message is the
    // reason as it is, with no "backend threw:" ahead of it.
    std::optional<Status> told;
    try {
        b.prepare(c.problem);
        start = std::chrono::steady_clock::now();
        out = b.run(c.problem, b.provides_stages());
    } catch (const CaseSkipped& e) {
        told = Status::skip;
        threw = e.what();
    } catch (const CaseUnanswered& e) {
        told = Status::error;
        threw = e.what();
    } catch (const BackendFailed& e) {
        told = Status::error;
        threw = e.what();
    } catch (const std::exception& e) {
        threw = e.what();
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::vector<std::string> written = changed_inputs(c.problem, before);
    if (!written.empty()) {
        inputs_written = true;
        r.status = Status::error;
        r.reason = "the backend wrote into its inputs (" + joined(written) +
                   "), which it may only read; its output was not judged" +
                   (threw.empty() ? std::string() : " (it also threw: " + threw + ")");
        return r;
    }
    if (told == Status::skip) {
        r.status = Status::skip;
        r.reason = "not supported: " + (threw.empty() ? std::string("the implementation skipped this case") : threw);
        r.seconds = 0;
        return r;
    }
    if (told || !threw.empty()) {
        r.status = Status::error;
        r.reason = told ? threw : "backend threw: " + threw;
        r.seconds = 0;
        return r;
    }

    const double seconds = r.seconds;
    const std::string ticket = r.ticket;
    const std::optional<CaseParams> params = r.params;
    r = judge_output(c, out, JudgeInput{r.file, r.backend, precision, r.repro, o.threads});
    r.seconds = seconds;
    r.ticket = ticket;
    r.params = params;
    if (expected && expected->status == Status::fail) {
        if (r.status == Status::fail) {
            r.status = Status::xfail;
            r.reason = "expected failure: " + expected->reason + " (" + r.reason + ")";
        } else if (r.status == Status::pass) {
            r.status = Status::xpass;
            r.reason = "listed as failing (" + expected->reason + ") but passes: update the expectation file";
        } else if (r.status == Status::mistrusted) {
            // It no longer fails: the entry is as stale as for a PASS, and a MISTRUSTED (which
            // exits 0) would hide that. XPASS fails the run; without the entry it is MISTRUSTED.
            r.status = Status::xpass;
            r.reason = "listed as failing (" + expected->reason + ") but passes, as MISTRUSTED (" + r.reason +
                       "): update the expectation file";
        }
    }
    return r;
}

// Reads, validates and selects one golden file; nullopt (with the reason in `error`, or none when
// the tier or filters leave it out) when it is not run.
std::optional<golden::GoldenCase> load_case(const std::string& file, const RunOptions& o, std::string& error) {
    try {
        golden::ReadOptions ro;
        ro.max_memory = o.max_memory;
        golden::GoldenCase c = golden::read_golden(file, ro);
        validate(c.problem);
        if (!c.tier.empty() && !golden::tier_includes(o.tier, c.tier)) return std::nullopt;
        bool keep = o.filters.empty();
        // The name as stored or as printed, as select_files and expectation entries match.
        for (const auto& f : o.filters) keep = keep || golden::case_glob_match(f, c.problem.name);
        if (!keep || (o.expert_type && c.problem.attributes.expert_type != *o.expert_type)) return std::nullopt;
        // Only for the cases that run: recomputing the stored results is the expensive part.
        if (o.check_stored_results)
            golden::check_stored_results(file, c, {golden::StoredResultsOptions{}.max_tokens, o.threads});
        return c;
    } catch (const golden::FileError& e) {
        error = e.what();
    } catch (const InputError& e) {
        // The path (a name in a suite folder) and the message (which may quote the file's values)
        // reach the terminal: escaped, as a FileError's message is.
        error = golden::printable("golden file '" + file + "': the problem is rejected: " + e.what());
    }
    return std::nullopt;
}

// run_one; where the backend wrote into the inputs, the case is read again from its file, so that
// the backends after it meet the inputs the reference computed from.
CaseResult run_one_and_restore(golden::GoldenCase& c, const std::string& file, Backend& b, const RunOptions& o) {
    bool inputs_written = false;
    CaseResult r = run_one(c, file, b, o, inputs_written);
    if (inputs_written) {
        golden::ReadOptions ro;
        ro.max_memory = o.max_memory;
        c = golden::read_golden(file, ro);  // read and checked before: no surprise expected
    }
    return r;
}

// In one process (--no-isolation) a backend that calls exit() would end the tool with the status
// it chose, 0 included, before any report: a silent pass. While a backend runs, an exit handler
// turns that into a message and exit status 1 (a worker process reports it as an ERROR instead).
class ExitDuringBackend {
public:
    ExitDuringBackend(const std::string& backend, const std::string& case_name) {
        static const bool registered = std::atexit(&ExitDuringBackend::on_exit) == 0;
        (void)registered;
        std::snprintf(what_, sizeof what_, "backend '%s' called exit() while running case '%s'", backend.c_str(),
                      case_name.c_str());
        active_ = true;
    }
    ~ExitDuringBackend() { active_ = false; }
    ExitDuringBackend(const ExitDuringBackend&) = delete;
    ExitDuringBackend& operator=(const ExitDuringBackend&) = delete;

private:
    static void on_exit() {
        if (!active_) return;
        std::fprintf(stderr, "moe-conform: error: %s (--no-isolation: the run ends here, with no report; without it "
                             "the case is an ERROR and the run goes on)\n", what_);
        std::fflush(stderr);
        std::_Exit(1);
    }
    static inline bool active_ = false;
    static inline char what_[512] = {};
};

// Two files of one run with the same case name would be merged by what names results by case:
// JUnit's classname and name, the result files of --write-results, an expectation entry. So the
// run is no verdict (exit 2), each such name told once with its first two files.
void refuse_duplicate_case_names(RunOutcome& outcome) {
    std::map<std::string, std::string> first_file;
    std::set<std::string> told;
    for (const auto& r : outcome.results) {
        const auto [at, fresh] = first_file.emplace(r.case_name, r.file);
        if (!fresh && at->second != r.file && told.insert(r.case_name).second)
            outcome.input_errors.push_back("case name '" + r.case_name + "' is in two files of this run: '" + at->second +
                                           "' and '" + r.file + "' (reports and result files would merge them)");
    }
}

// In one process (--no-isolation) no parent watches the steps, and a model-sized case is read,
// checked and run for minutes with nothing printed: a StepTimer says what is still going on, with
// the worker-mode parent's line ("[3/12] still running cpu on FILE (60 s)", every
// o.notice_seconds). It only writes to stderr, and only while a step runs (never after end(),
// among the progress lines); a backend's own stderr lines may meet a notice, as a worker's may.
class StepNotices {
public:
    explicit StepNotices(const RunOptions& o) : o_(o) {
        if (!o.progress || !(o.notice_seconds > 0)) return;
        try {
            timer_.emplace([](const std::string& line, double seconds) {
                std::cerr << line + " (" + std::to_string(static_cast<long>(seconds)) + " s)\n" << std::flush;
            });
        } catch (const std::system_error&) {
            // No thread to be had (a process at its limit): the run goes on without notices.
        }
    }

    // Step `what` ("reading and checking ", "running cpu on ") of o.files[file] begins.
    void begin(std::size_t file, const std::string& what) {
        if (timer_)
            timer_->begin("[" + std::to_string(file + 1) + "/" + std::to_string(o_.files.size()) + "] still " + what +
                              golden::printable(o_.files[file]),
                          o_.notice_seconds, o_.notice_seconds);
    }
    void end() {
        if (timer_) timer_->end();
    }

private:
    const RunOptions& o_;
    std::optional<StepTimer> timer_;
};

void print_progress(std::size_t n, std::size_t total, const CaseResult& r) {
    char line[256];
    std::snprintf(line, sizeof line, "[%zu/%zu] %-10s %-16s %s", n, total, std::string(status_name(r.status)).c_str(),
                  r.backend.c_str(), r.case_name.c_str());
    std::cerr << line << "\n";
}

}  // namespace

RunOutcome run_suite(const RunOptions& o, const std::vector<Backend*>& backends) {
    RunOutcome outcome;
    StepNotices notices(o);
    std::size_t n = 0;
    for (const auto& file : o.files) {
        ++n;
        std::string error;
        notices.begin(n - 1, "reading and checking ");
        std::optional<golden::GoldenCase> c = load_case(file, o, error);
        notices.end();
        if (!c) {
            if (error.empty()) continue;
            outcome.input_errors.push_back(error);
            if (o.progress) std::cerr << "[" << n << "/" << o.files.size() << "] " << error << "\n";
            continue;
        }
        for (auto* b : backends) {
            const ExitDuringBackend guard(b->name(), golden::printable(c->problem.name));
            notices.begin(n - 1, "running " + b->name() + " on ");
            CaseResult r = run_one_and_restore(*c, file, *b, o);
            notices.end();
            if (o.progress) print_progress(n, o.files.size(), r);
            outcome.results.push_back(std::move(r));
        }
    }
    refuse_duplicate_case_names(outcome);
    return outcome;
}

RunOutcome run_suite_from_makers(const RunOptions& o, const std::vector<BackendMaker>& makers) {
    if (!o.isolate) {
        // What the backends print to stdout goes to stderr, as from a worker: the report is
        // written to stdout after the run, and nothing else writes there meanwhile (progress and
        // notices go to stderr). Not in run_suite itself: the Python door calls it, and a Python
        // function's print() is the user's own business.
        const StdoutToStderr backends_print_to_stderr;
        std::vector<std::unique_ptr<Backend>> owned;
        std::vector<Backend*> list;
        for (const auto& m : makers) {
            owned.push_back(m.make());
            list.push_back(owned.back().get());
        }
        return run_suite(o, list);
    }
    detail::CaseSteps steps;
    steps.load = [&o](const std::string& file, std::string& error) {
        std::optional<golden::GoldenCase> c = load_case(file, o, error);
        if (!c && !error.empty() && o.progress) std::cerr << error << "\n";
        return c;
    };
    steps.run = [&o](golden::GoldenCase& c, const std::string& file, Backend& b) {
        return run_one_and_restore(c, file, b, o);
    };
    steps.progress = [&o](std::size_t n, const CaseResult& r) { print_progress(n, o.files.size(), r); };
    RunOutcome outcome = detail::run_in_workers(o, makers, steps);
    refuse_duplicate_case_names(outcome);
    return outcome;
}

int run_exit_code(const RunOutcome& outcome, bool fail_on_mistrusted) {
    if (!outcome.input_errors.empty()) return 2;
    const auto s = summarize(outcome.results);
    if (s.total == 0) return 2;
    const auto fails = [fail_on_mistrusted](const CaseResult& r) { return fails_run(r.status, fail_on_mistrusted); };
    if (std::any_of(outcome.results.begin(), outcome.results.end(), fails)) return 1;
    if (s.skipped == s.total) return 77;
    return 0;
}

}  // namespace moe::conformance
