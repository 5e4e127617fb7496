#include "case_worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "moe/conformance/shell_word.hpp"
#include "moe/spec/stdout_to_stderr.hpp"

namespace moe::conformance::detail {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// CaseResult <-> JSON (sent as CBOR, which keeps every double exactly, Inf and NaN included)

json element_json(const ElementReport& e) { return {e.token, e.feature, e.reference, e.got, e.bound}; }
ElementReport element_from(const json& j) {
    return {j.at(0).get<std::size_t>(), j.at(1).get<std::size_t>(), j.at(2).get<double>(), j.at(3).get<double>(),
            j.at(4).get<double>()};
}

// By name, as the reports write them: read back with the spec's parsers.
json params_json(const CaseParams& p) {
    const ResolvedParams& r = p.resolved;
    return {std::string(expert_type_name(p.expert_type)), std::string(convention_name(p.convention)), r.swish_beta,
            r.clamp_limit, r.gate_lane, std::string(weight_layout_name(r.weight_layout)),
            std::string(routing_layout_name(r.routing_layout))};
}
CaseParams params_from(const json& j) {
    CaseParams p;
    p.expert_type = parse_expert_type(j.at(0).get<std::string>());
    p.convention = parse_convention(j.at(1).get<std::string>());
    p.resolved.swish_beta = j.at(2).get<double>();
    p.resolved.clamp_limit = j.at(3).get<double>();
    p.resolved.gate_lane = j.at(4).get<int>();
    p.resolved.weight_layout = parse_weight_layout(j.at(5).get<std::string>());
    p.resolved.routing_layout = parse_routing_layout(j.at(6).get<std::string>());
    return p;
}

json result_json(const CaseResult& r) {
    json m = {{"elements", r.metrics.elements},         {"over_bound", r.metrics.over_bound},
              {"max_abs_error", r.metrics.max_abs_error}, {"max_rel_error", r.metrics.max_rel_error},
              {"max_ulps", r.metrics.max_ulps},           {"worst_ratio", r.metrics.worst_ratio}};
    if (r.metrics.worst) m["worst"] = element_json(*r.metrics.worst);
    m["violations"] = json::array();
    for (const auto& v : r.metrics.violations) m["violations"].push_back(element_json(v));
    if (const auto& g = r.metrics.ratio_grid) m["grid"] = {g->tokens, g->features, g->rows, g->cols, g->cells};
    json j = {{"case_name", r.case_name}, {"file", r.file},       {"backend", r.backend},
              {"data_type", r.data_type}, {"compute_type", r.compute_type}, {"storage_type", r.storage_type}, {"dequant_type", r.dequant_type},
              {"exact", r.exact},         {"status", static_cast<int>(r.status)}, {"reason", r.reason},
              {"ticket", r.ticket},       {"seconds", r.seconds}, {"metrics", m}, {"repro", r.repro}};
    if (const auto& s = r.first_divergent_stage)
        j["stage"] = {s->stage, s->worst_ratio, s->token, s->slot, s->feature, s->reference, s->got, s->bound,
                      s->per_stage};
    if (!r.stages_within_bound.empty()) j["stages_within_bound"] = r.stages_within_bound;
    if (r.params) j["params"] = params_json(*r.params);
    return j;
}

CaseResult result_from(const json& j) {
    CaseResult r;
    r.case_name = j.at("case_name");
    r.file = j.at("file");
    r.backend = j.at("backend");
    r.data_type = j.at("data_type");
    r.compute_type = j.at("compute_type");
    r.storage_type = j.at("storage_type");
    r.dequant_type = j.at("dequant_type");
    r.exact = j.at("exact");
    r.status = static_cast<Status>(j.at("status").get<int>());
    r.reason = j.at("reason");
    r.ticket = j.at("ticket");
    r.seconds = j.at("seconds");
    r.repro = j.at("repro");
    const json& m = j.at("metrics");
    r.metrics.elements = m.at("elements");
    r.metrics.over_bound = m.at("over_bound");
    r.metrics.max_abs_error = m.at("max_abs_error");
    r.metrics.max_rel_error = m.at("max_rel_error");
    r.metrics.max_ulps = m.at("max_ulps");
    r.metrics.worst_ratio = m.at("worst_ratio");
    if (m.contains("worst")) r.metrics.worst = element_from(m.at("worst"));
    for (const auto& v : m.at("violations")) r.metrics.violations.push_back(element_from(v));
    if (m.contains("grid")) {
        const json& g = m.at("grid");
        RatioGrid grid;
        grid.tokens = g.at(0).get<std::size_t>();
        grid.features = g.at(1).get<std::size_t>();
        grid.rows = g.at(2).get<std::size_t>();
        grid.cols = g.at(3).get<std::size_t>();
        grid.cells = g.at(4).get<std::vector<double>>();
        r.metrics.ratio_grid = std::move(grid);
    }
    if (j.contains("stage")) {
        const json& s = j.at("stage");
        StageDivergence d;
        d.stage = s.at(0).get<std::string>();
        d.worst_ratio = s.at(1).get<double>();
        d.token = s.at(2).get<std::size_t>();
        d.slot = s.at(3).get<std::size_t>();
        d.feature = s.at(4).get<std::size_t>();
        d.reference = s.at(5).get<double>();
        d.got = s.at(6).get<double>();
        d.bound = s.at(7).get<double>();
        d.per_stage = s.at(8).get<std::vector<std::pair<std::string, double>>>();
        r.first_divergent_stage = d;
    }
    if (j.contains("stages_within_bound"))
        r.stages_within_bound = j.at("stages_within_bound").get<std::vector<std::pair<std::string, double>>>();
    if (j.contains("params")) r.params = params_from(j.at("params"));
    return r;
}

// Every field of a CaseResult crosses the pipe: a field added to CaseResult must be added here.

// ---------------------------------------------------------------------------------------------
// Frames on the pipe: 4-byte little-endian length, then CBOR.

// Every message carries the worker's clock ("t": steady_clock, the machine's monotonic clock, the
// same in the parent): a step's begin and end as the worker saw them, however late the parent
// reads them (see run_in_workers).
void send(int fd, json message) {
    message["t"] = Clock::now().time_since_epoch().count();
    const std::vector<std::uint8_t> body = json::to_cbor(message);
    std::vector<std::uint8_t> frame(4 + body.size());
    for (int i = 0; i < 4; ++i) frame[i] = static_cast<std::uint8_t>(body.size() >> (8 * i));
    std::memcpy(frame.data() + 4, body.data(), body.size());
    for (std::size_t done = 0; done < frame.size();) {
        const ssize_t n = ::write(fd, frame.data() + done, frame.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) ::_exit(3);  // the parent is gone
        done += static_cast<std::size_t>(n);
    }
}

// Complete frames at the front of `buffer`, removed from it.
std::vector<json> take_frames(std::vector<std::uint8_t>& buffer) {
    std::vector<json> out;
    std::size_t at = 0;
    while (buffer.size() - at >= 4) {
        std::uint32_t len = 0;
        for (int i = 0; i < 4; ++i) len |= std::uint32_t{buffer[at + i]} << (8 * i);
        if (buffer.size() - at - 4 < len) break;
        out.push_back(json::from_cbor(buffer.begin() + static_cast<std::ptrdiff_t>(at + 4),
                                      buffer.begin() + static_cast<std::ptrdiff_t>(at + 4 + len)));
        at += 4 + len;
    }
    buffer.erase(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(at));
    return out;
}

// ---------------------------------------------------------------------------------------------
// The worker

// _exit skips stdio's buffers: what a backend printed to a redirected stdout would be lost.
[[noreturn]] void flush_and_exit() {
    std::cout.flush();
    std::fflush(nullptr);
    ::_exit(0);
}

// The compute and storage types `b` declares for `p`, for the ERROR of a crash or a timeout in
// the step that follows. Sent after the step's "begin" (a backend that crashes here is lost in its
// own step) and only where run_one would ask too: an available backend (an unavailable one may
// have no precision to give). Nothing is sent when it throws: run_one reports that.
void send_declared_types(int fd, const Backend& b, const Problem& p) {
    try {
        if (!b.availability().available) return;
        const Precision declared = b.precision_for(p);
        send(fd, {{"types", true},
                  {"compute", std::string(dtype_name(declared.compute))},
                  {"storage", std::string(dtype_name(declared.storage))}});
    } catch (const std::exception&) {
    }
}

// Reads and runs files from (file0, backend0) on; one message per step. Never returns.
[[noreturn]] void worker_main(int fd, const RunOptions& o, const std::vector<BackendMaker>& makers,
                              const CaseSteps& steps, std::size_t file0, std::size_t backend0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the run
    ::signal(SIGPIPE, SIG_IGN);
    // The worker writes nothing to stdout (results go down the pipe, progress to stderr): what
    // the backends print there goes to stderr, not into the parent's report.
    if (const int saved = stdout_to_stderr_for_good(); saved >= 0) ::close(saved);
    std::vector<std::unique_ptr<Backend>> backends;
    try {
        for (const auto& m : makers) backends.push_back(m.make());
    } catch (const std::exception& e) {
        send(fd, {{"fatal", std::string("cannot make the backends: ") + e.what()}});
        flush_and_exit();
    }
    for (std::size_t i = file0; i < o.files.size(); ++i) {
        send(fd, {{"begin", i}, {"backend", -1}});
        std::string error;
        std::optional<golden::GoldenCase> c = steps.load(o.files[i], error);
        if (!c) {
            send(fd, {{"file", i}, {"input_error", error}});
            continue;
        }
        // The parameters and the data type too: a backend that crashes on the case gets an ERROR
        // that says them.
        send(fd, {{"file", i},
                  {"case_name", golden::printable(c->problem.name)},
                  {"params", params_json(case_params(c->problem.attributes))},
                  {"data_type", std::string(dtype_name(c->problem.input(kHiddenStates).dtype()))}});
        for (std::size_t j = i == file0 ? backend0 : 0; j < backends.size(); ++j) {
            send(fd, {{"begin", i}, {"backend", j}});
            send_declared_types(fd, *backends[j], c->problem);
            const CaseResult r = steps.run(*c, o.files[i], *backends[j]);
            if (o.progress) steps.progress(i + 1, r);
            send(fd, {{"file", i}, {"result", result_json(r)}});
        }
    }
    send(fd, {{"end", true}});
    flush_and_exit();
}

// ---------------------------------------------------------------------------------------------
// The parent

std::string signal_text(int sig) {
    const char* name = sig == SIGSEGV   ? "SIGSEGV"
                       : sig == SIGABRT ? "SIGABRT"
                       : sig == SIGBUS  ? "SIGBUS"
                       : sig == SIGFPE  ? "SIGFPE"
                       : sig == SIGILL  ? "SIGILL"
                       : sig == SIGKILL ? "SIGKILL"
                                        : nullptr;
    std::string s = "signal " + std::to_string(sig);
    if (name) s += std::string(" (") + name + ", " + ::strsignal(sig) + ")";
    if (sig == SIGKILL) s += "; the system may have run out of memory";
    return s;
}

struct Position {
    std::size_t file = 0;
    long backend = -1;  // -1: reading the file
};

// Results for what the lost worker was doing: every backend when it was reading the file.
// --case-timeout's value as the user would type it (1e-06, 600).
std::string seconds_text(double seconds) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", seconds);
    return buf;
}

// The types an ERROR for a lost step shows: the case's data type (once the worker read the file)
// and the lost step's backend's declared compute and storage types (once the worker sent them).
struct KnownTypes {
    std::string data, compute, storage;  // "" where not known
};

// timed_out: the worker was killed at --case-timeout, which the repro line then repeats (at the
// default limit a rerun would not time out the same way); nothing says the file is at fault.
// after_backends: backend code ran in the same worker before (on earlier cases, or earlier
// backends on this one), and a thread or process it left running can be what crashed: the reason
// says so rather than blaming the file or this backend alone; the repro line runs the step alone.
// `known`: the types the worker told before it was lost.
void record_loss(const RunOptions& o, const std::vector<BackendMaker>& makers, const CaseSteps& steps,
                 const Position& at, const std::string& case_name, const std::optional<CaseParams>& params,
                 const KnownTypes& known, const std::string& why, bool timed_out, bool after_backends,
                 RunOutcome& outcome) {
    const std::string& file = o.files[at.file];
    const std::size_t first = at.backend < 0 ? 0 : static_cast<std::size_t>(at.backend);
    const std::size_t last = at.backend < 0 ? makers.size() : first + 1;
    for (std::size_t j = first; j < last; ++j) {
        CaseResult r;
        r.case_name = case_name.empty() ? std::filesystem::path(golden::printable(file)).stem().string() : case_name;
        r.file = golden::printable(file);
        r.backend = makers[j].name;
        r.params = params;  // known once the worker read the file
        r.data_type = known.data;
        if (at.backend >= 0) {  // the backend's declared types, for the step it was lost in
            r.compute_type = known.compute;
            r.storage_type = known.storage;
        }
        r.status = Status::error;
        const std::string leftover = "a thread or process that a backend started earlier in the same worker process "
                                     "and left running; the repro line runs this step alone";
        if (at.backend >= 0)
            r.reason = "running the backend on this case " + why + (after_backends && !timed_out ? " (it, or " + leftover + ")" : "");
        else if (timed_out)
            r.reason = "reading or checking the golden file " + why + " (the backends did not run)";
        else if (after_backends)
            r.reason = "reading or checking the golden file " + why + " (the file is damaged or hostile, or " + leftover +
                       "; the backends did not run)";
        else
            r.reason = "reading or checking the golden file " + why + " (the file is damaged or hostile; the backends did not run)";
        r.repro = repro_prefix(o, makers[j].name) + " --backend " + shell_word(makers[j].name) + " --case " +
                  shell_word(file);  // the real path
        if (timed_out) r.repro += " --case-timeout " + seconds_text(o.case_timeout);
        if (o.progress) steps.progress(at.file + 1, r);
        outcome.results.push_back(std::move(r));
    }
}

// The parent's notice of a step that has run RunOptions::notice_seconds or more: "[3/12] still
// reading and checking FILE (40 s)", or "... still running BACKEND on FILE (40 s)".
std::string still_working(const RunOptions& o, const std::vector<BackendMaker>& makers, std::size_t file, long backend,
                          double seconds) {
    const std::string what = backend < 0 ? "reading and checking " : "running " + makers[static_cast<std::size_t>(backend)].name + " on ";
    return "[" + std::to_string(file + 1) + "/" + std::to_string(o.files.size()) + "] still " + what +
           golden::printable(o.files[file]) + " (" + std::to_string(static_cast<long>(seconds)) + " s)\n";
}

}  // namespace

RunOutcome run_in_workers(const RunOptions& o, const std::vector<BackendMaker>& makers, const CaseSteps& steps) {
    RunOutcome outcome;
    Position next;  // where the next worker starts
    std::vector<std::string> case_names(o.files.size());
    std::vector<std::optional<CaseParams>> case_params_of(o.files.size());
    std::vector<std::string> data_types(o.files.size());
    while (next.file < o.files.size()) {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
        std::cout.flush();
        std::cerr.flush();
        std::fflush(nullptr);  // nothing buffered here is written again by the worker, onto stderr
        const pid_t pid = ::fork();
        if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
        if (pid == 0) {
            ::close(fds[0]);
            worker_main(fds[1], o, makers, steps, next.file, next.backend < 0 ? 0 : static_cast<std::size_t>(next.backend));
        }
        ::close(fds[1]);
        const Position begun = next;
        Position at{next.file, next.backend};
        KnownTypes step_types;  // the current backend step's declared types, once the worker sent them
        bool started = false, finished = false, timed_out = false, reaped = false;
        bool in_step = false;  // a step (a file's reading, or a backend on it) has begun and not ended
        int status = 0;
        auto phase_start = Clock::now(), last_notice = phase_start;
        // A step past the limit at time t (the parent's clock while the pipe is idle, the worker's
        // stamp when the step ends). Looked at when the step ends too, not only while the pipe is
        // idle: a worker that sends its frames faster than they are read kept the pipe busy, and a
        // step that took longer than --case-timeout passed (a run with a limit of 1 us passed both
        // of its cases in 3 of 40 runs).
        const auto past_limit = [&](Clock::time_point t) {
            return o.case_timeout > 0 && std::chrono::duration<double>(t - phase_start).count() >= o.case_timeout;
        };
        const auto worker_clock = [](const json& m) { return Clock::time_point(Clock::duration(m.at("t").get<Clock::rep>())); };
        std::vector<std::uint8_t> buffer;
        for (;;) {
            // At most kCheckMs between looks at the worker itself: a process the backend started
            // can hold the pipe open after the worker died, and its end must not wait for that.
            constexpr int kCheckMs = 250;
            int wait_ms = reaped ? 0 : kCheckMs;
            if (o.case_timeout > 0) {
                const double left = o.case_timeout - std::chrono::duration<double>(Clock::now() - phase_start).count();
                wait_ms = left <= 0 ? 0 : static_cast<int>(std::min(left * 1000.0 + 1.0, double(wait_ms)));
            }
            pollfd p{fds[0], POLLIN, 0};
            const int ready = ::poll(&p, 1, wait_ms);
            if (ready < 0 && errno == EINTR) continue;
            if (ready == 0) {
                if (past_limit(Clock::now())) {
                    timed_out = true;
                    ::kill(pid, SIGKILL);
                    break;
                }
                if (reaped) break;  // ended, and everything it sent has been read
                // A model-sized case is read, checked and run for minutes with nothing to print:
                // a line every o.notice_seconds says what is still going on.
                if (o.progress && started &&
                    std::chrono::duration<double>(Clock::now() - last_notice).count() >= o.notice_seconds) {
                    last_notice = Clock::now();
                    std::cerr << still_working(o, makers, at.file, at.backend,
                                               std::chrono::duration<double>(last_notice - phase_start).count())
                              << std::flush;
                }
                // Nothing to read: has the worker ended? Then read what it left in the pipe.
                if (::waitpid(pid, &status, WNOHANG) == pid) reaped = true;
                continue;
            }
            std::uint8_t chunk[65536];
            const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;  // the worker is gone
            buffer.insert(buffer.end(), chunk, chunk + n);
            for (const json& m : take_frames(buffer)) {
                const bool ends_step = m.contains("begin") || m.contains("result") || m.contains("input_error");
                if (ends_step && in_step && past_limit(worker_clock(m))) {
                    timed_out = true;  // what the step sent is dropped, as if it had been killed in time
                    ::kill(pid, SIGKILL);
                    break;
                }
                if (ends_step) in_step = false;
                if (m.contains("begin")) {
                    started = in_step = true;
                    at = {m.at("begin").get<std::size_t>(), m.at("backend").get<long>()};
                    step_types = {};
                    phase_start = worker_clock(m);
                    last_notice = Clock::now();
                } else if (m.contains("types")) {
                    step_types.compute = m.at("compute");
                    step_types.storage = m.at("storage");
                } else if (m.contains("input_error")) {
                    if (!m.at("input_error").get<std::string>().empty()) outcome.input_errors.push_back(m.at("input_error"));
                } else if (m.contains("case_name")) {
                    case_names[m.at("file").get<std::size_t>()] = m.at("case_name");
                    case_params_of[m.at("file").get<std::size_t>()] = params_from(m.at("params"));
                    data_types[m.at("file").get<std::size_t>()] = m.at("data_type");
                } else if (m.contains("result")) {
                    outcome.results.push_back(result_from(m.at("result")));
                } else if (m.contains("fatal")) {
                    outcome.input_errors.push_back(m.at("fatal"));
                    finished = true;
                } else if (m.contains("end")) {
                    finished = true;
                }
            }
            if (timed_out) break;
        }
        ::close(fds[0]);
        while (!reaped && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (finished) break;
        if (!started && !timed_out) {  // lost before it read anything: not a file's fault, so do not go on
            outcome.input_errors.push_back("the worker process could not start (" +
                                           (WIFSIGNALED(status) ? "killed by " + signal_text(WTERMSIG(status))
                                                                : "exit status " + std::to_string(WEXITSTATUS(status))) +
                                           "); rerun with --no-isolation to see why");
            break;
        }
        ++outcome.worker_restarts;
        const std::string why = timed_out ? "timed out after " + seconds_text(o.case_timeout) + " s (--case-timeout); it was killed"
                                : WIFSIGNALED(status) ? "crashed: the worker process was killed by " + signal_text(WTERMSIG(status))
                                                      : "ended the worker process unexpectedly (exit status " +
                                                            std::to_string(WEXITSTATUS(status)) + ")";
        // Backend code ran in this worker before the step it was lost in: on an earlier file, or
        // an earlier backend on this one.
        const bool after_backends = !makers.empty() && (at.file > begun.file || at.backend > std::max(begun.backend, 0L));
        step_types.data = data_types[at.file];
        record_loss(o, makers, steps, at, case_names[at.file], case_params_of[at.file], step_types, why, timed_out,
                    after_backends, outcome);
        next = at.backend < 0 || static_cast<std::size_t>(at.backend) + 1 >= makers.size()
                   ? Position{at.file + 1, -1}
                   : Position{at.file, at.backend + 1};
    }
    return outcome;
}

}  // namespace moe::conformance::detail
