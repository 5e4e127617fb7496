#include "moe/shrink/shrink.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <numeric>
#include <optional>
#include <sstream>

#include "ddmin.hpp"
#include "moe/conformance/compare.hpp"
#include "moe/reference/exactness.hpp"
#include "moe/generator/golden_builder.hpp"
#include "moe/shrink/crash_guard.hpp"
#include "moe/conformance/step_timer.hpp"
#include "moe/shrink/candidate_limit.hpp"
#include "moe/shrink/shrink_file.hpp"
#include "moe/spec/error.hpp"
#include "oracle_worker.hpp"

namespace moe::shrink {

namespace {

using Clock = std::chrono::steady_clock;

Keep all_of(std::size_t n) {
    Keep k(n);
    std::iota(k.begin(), k.end(), std::size_t{0});
    return k;
}

std::string arrow(const char* what, std::size_t from, std::size_t to) {
    return std::string(what) + " " + std::to_string(from) + " -> " + std::to_string(to);
}

// The oracle, each run described by what it runs, and the limit on the runs after the first set
// from its time. In this process: under Options::overrun's watchdog and Options::crashed's signal
// handlers (the message a hang or a crash leaves). In a worker process (OracleWorker): a hang or
// a crash is the run's verdict, with nothing to watch here.
class WatchedOracle {
public:
    WatchedOracle(const Oracle& oracle, const Options& o) : oracle_(&oracle), o_(o) {
        // The timer calls back while the run is stuck in the oracle: limit_ is not being set then
        // (first() sets it after its run's end(), which waits on the timer's lock).
        if (o.overrun) timer_.emplace([this](const std::string& running, double) { o_.overrun(running, limit_); });
        if (o.crashed) guard_.emplace(o.crashed, kExitBackendCrashed);
        limit_ = first_limit();
    }
    WatchedOracle(OracleWorker& worker, const Options& o) : worker_(&worker), o_(o) { limit_ = first_limit(); }

    Verdict operator()(const golden::GoldenCase& c, const std::string& what) {
        if (worker_) return worker_->run(c, limit_);
        const std::string running = what + " (" + problem_size(c.problem).to_string() + ")";
        if (timer_) timer_->begin(running, limit_);
        struct End {  // also when the oracle throws (a Python fn's KeyboardInterrupt)
            std::optional<conformance::StepTimer>& timer;
            std::optional<CrashGuard>& guard;
            ~End() {
                if (guard) guard->disarm();
                if (timer) timer->end();
            }
        } end{timer_, guard_};
        if (guard_) guard_->arm(running);  // after `end`: the timed run ends if making the messages throws
        return (*oracle_)(c);
    }

    // The case as given, run first: its time sets the limit on every later run (unless given).
    Verdict first(const golden::GoldenCase& c) {
        const auto t0 = Clock::now();
        Verdict v = (*this)(c, "the case as given");
        const double took = std::chrono::duration<double>(Clock::now() - t0).count();
        const double given_limit = limit_;
        if (o_.candidate_seconds <= 0) limit_ = default_candidate_seconds(took, o_.max_seconds);
        if ((timer_ || worker_) && o_.progress) {
            std::ostringstream line;  // said once: what a later hang is measured against
            line.precision(3);
            if (v.hung_after > 0)  // then every run that still hangs takes the whole limit
                line << "the case as given hangs (no verdict after " << given_limit << " s); each later run that "
                     << "still hangs takes " << limit_ << " s (--candidate-seconds sets a shorter limit)";
            else
                line << "the case as given ran in " << took << " s; a later run past " << limit_
                     << " s is taken for a hang";
            o_.progress(line.str());
        }
        return v;
    }

    double limit() const { return limit_; }

private:
    // The case as given: nothing measured yet, so the whole search's budget (with the floor).
    double first_limit() const {
        return o_.candidate_seconds > 0 ? o_.candidate_seconds : std::max(o_.max_seconds, kMinCandidateSeconds);
    }

    const Oracle* oracle_ = nullptr;
    OracleWorker* worker_ = nullptr;
    const Options& o_;
    std::optional<conformance::StepTimer> timer_;
    std::optional<CrashGuard> guard_;
    double limit_ = 0;
};

// One shrink: the smallest failing case so far, the failure it must keep, the budget.
class Shrinker {
public:
    Shrinker(const golden::GoldenCase& failing, Verdict want, WatchedOracle& oracle, const Options& o)
        : current_(failing), want_(std::move(want)), verdict_(want_), oracle_(oracle), o_(o), start_(Clock::now()),
          vacuous_(conformance::vacuous_case(failing).has_value()) {}

    // Keeps `candidate` when the backend still fails on it the same way.
    bool attempt(const Problem& candidate, const std::string& edit) {
        if (!budget_left()) return false;
        // An edit that changes nothing (keep_hidden on compressed weights returns the problem as
        // it is) would "still fail" and be kept: every pass then changed something, and the
        // search looped until its budget was spent, listing hundreds of such edits.
        if (candidate.inputs == current_.problem.inputs) return false;
        golden::GoldenCase c;
        try {
            c = rebuild_case(candidate, current_, o_.threads);
        } catch (const InputError&) {
            return false;  // not a valid problem (K > E, ...): not a candidate
        }
        // A case whose reference output is (nearly) all zeros proves little, and a backend that
        // leaves memory uninitialised may pass it by chance: not a candidate, unless the original
        // was already one.
        if (!vacuous_ && conformance::vacuous_case(c)) return false;
        ++runs_;
        const Verdict v = oracle_(c, "the candidate '" + edit + "'");
        if (!same_failure(want_, v)) return false;
        current_ = std::move(c);
        verdict_ = v;
        edits_.push_back(edit);
        if (o_.progress) o_.progress(edit + ": " + problem_size(current_.problem).to_string());
        if (o_.accepted) o_.accepted(current_);
        return true;
    }

    // Removes items of a size with delta debugging, `unit` consecutive ones at a time (a compressed
    // weight's group of inputs); `edit(base, kept)` makes the candidate.
    template <class Edit>
    bool reduce(const char* what, std::size_t n, std::size_t min_keep, Edit edit, std::size_t unit = 1) {
        const std::size_t units = n / unit;
        if (units <= min_keep) return false;
        const Problem base = current_.problem;
        auto items = [unit](const Keep& k) {
            Keep out;
            for (std::size_t u : k)
                for (std::size_t i = 0; i < unit; ++i) out.push_back(u * unit + i);
            return out;
        };
        if (edit(base, items({0})).inputs == base.inputs) return false;  // not applicable here (see attempt)
        const Keep kept = ddmin(
            all_of(units), [&](const Keep& k) { return attempt(edit(base, items(k)), arrow(what, n, k.size() * unit)); },
            min_keep, [&] { return !budget_left(); });
        return kept.size() < units;
    }

    bool structure() {
        bool changed = false;
        if (current_.problem.input(kHiddenStates).rank() == 3)
            changed |= attempt(flatten_tokens(current_.problem), "hidden states [B, S, H] -> [T, H]");
        changed |= reduce("tokens", validate(current_.problem).T, 1, keep_tokens);
        changed |= reduce("slots", validate(current_.problem).K, 1, keep_slots);
        changed |= unused_experts();
        changed |= reduce("hidden features", validate(current_.problem).H, 1, keep_hidden, hidden_unit(current_.problem));
        changed |= reduce("intermediate features", validate(current_.problem).I, 1, keep_inter, inter_unit(current_.problem));
        return changed;
    }

    // The experts no token selects: all at once, else by delta debugging, since a failure may
    // need some of them (an expert-parallel mapping of E not a multiple of the devices).
    bool unused_experts() {
        const Dims d = validate(current_.problem);
        const Keep used = used_experts(current_.problem), all = all_of(d.E);
        Keep unused;
        std::set_difference(all.begin(), all.end(), used.begin(), used.end(), std::back_inserter(unused));
        if (unused.empty()) return false;
        const Problem base = current_.problem;
        auto with = [&](const Keep& kept) {
            Keep experts;
            std::merge(used.begin(), used.end(), kept.begin(), kept.end(), std::back_inserter(experts));
            return attempt(keep_experts(base, experts), arrow("experts", d.E, experts.size()));
        };
        const std::size_t min_keep = used.size() >= d.K ? 0 : d.K - used.size();  // K <= E
        if (min_keep == 0 && with({})) return true;
        return ddmin(unused, with, min_keep, [&] { return !budget_left(); }).size() < unused.size();
    }

    bool values() {
        bool changed = false;
        for (const char* bias : {kBias0, kBias1})
            if (current_.problem.has(bias)) changed |= attempt(drop_input(current_.problem, bias), std::string(bias) + " dropped");
        for (const char* name : {kHiddenStates, kWeight0, kWeight1, kWeight2, kBias0, kBias1, kRoutingWeights}) {
            if (!current_.problem.has(name)) continue;
            const Problem rounded = powers_of_two(current_.problem, name);
            if (!(rounded.input(name) == current_.problem.input(name)))
                changed |= attempt(rounded, std::string(name) + ": values rounded to powers of two");
            const Keep nonzero = nonzero_elements(current_.problem, name);
            if (nonzero.empty()) continue;
            if (attempt(zero_elements(current_.problem, name, nonzero), std::string(name) + ": every value zeroed")) {
                changed = true;
                continue;
            }
            const Problem base = current_.problem;
            const Keep kept = ddmin(
                nonzero,
                [&](const Keep& k) {
                    Keep zeroed;
                    std::set_difference(nonzero.begin(), nonzero.end(), k.begin(), k.end(), std::back_inserter(zeroed));
                    return attempt(zero_elements(base, name, zeroed), std::string(name) + ": " +
                                                                           std::to_string(zeroed.size()) + " of " +
                                                                           std::to_string(nonzero.size()) + " values zeroed");
                },
                0, [&] { return !budget_left(); });
            changed |= kept.size() < nonzero.size();
        }
        return changed;
    }

    bool budget_left() const {
        return runs_ < o_.max_runs && std::chrono::duration<double>(Clock::now() - start_).count() < o_.max_seconds;
    }

    Result result(const ProblemSize& before) const {
        Result r;
        r.shrunk = current_;
        r.verdict = verdict_;
        r.before = before;
        r.after = problem_size(current_.problem);
        r.runs = runs_;
        r.edits = edits_;
        if (runs_ >= o_.max_runs) {
            r.limit = "its limit of " + std::to_string(o_.max_runs) + " runs";
        } else if (!budget_left()) {
            std::ostringstream seconds;  // 120, 0.5: as given
            seconds << o_.max_seconds;
            r.limit = "its time limit of " + seconds.str() + " s";
        }
        return r;
    }

private:
    golden::GoldenCase current_;
    Verdict want_, verdict_;
    WatchedOracle& oracle_;
    Options o_;
    Clock::time_point start_;
    bool vacuous_;
    std::size_t runs_ = 0;
    std::vector<std::string> edits_;
};

// The message without its numbers: an error that names other sizes is still the same error.
std::string without_digits(const std::string& s) {
    std::string out;
    for (char ch : s)
        if (ch < '0' || ch > '9') out += ch;
    return out;
}

}  // namespace

bool same_failure(const Verdict& original, const Verdict& candidate) {
    using conformance::Status;
    // A crash is the same crash by its signal alone (its message names the signal only); a hang
    // is a hang. Neither is the same as an ERROR the backend returned, nor the reverse.
    if (original.signal != 0 || candidate.signal != 0) return candidate.signal == original.signal;
    if (original.hung_after > 0 || candidate.hung_after > 0) return original.hung_after > 0 && candidate.hung_after > 0;
    if (original.status == Status::fail) return candidate.status == Status::fail && candidate.stage == original.stage;
    if (original.status == Status::error)
        return candidate.status == Status::error && without_digits(candidate.reason) == without_digits(original.reason);
    return false;
}

golden::GoldenCase rebuild_case(const Problem& p, const golden::GoldenCase& original, int threads) {
    validate(p);
    golden::GoldenCase c;
    c.problem = p;
    c.tier = original.tier;
    c.description = original.description;
    c.generator = original.generator;
    c.exact = false;
    if (original.exact) {
        try {
            reference::certify_exact(p);
            c.exact = true;
        } catch (const InputError&) {
        }
    }
    generator::compute_outputs(c, {true, threads});
    return c;
}

namespace {

Result shrink_watched(const golden::GoldenCase& failing, WatchedOracle& watched, const Options& o) {
    const Verdict first = watched.first(failing);
    if (first.status != conformance::Status::fail && first.status != conformance::Status::error)
        throw InputError("case " + failing.problem.name + " does not fail on this backend (" +
                         std::string(conformance::status_name(first.status)) + "): nothing to shrink");
    const ProblemSize before = problem_size(failing.problem);
    Shrinker s(failing, first, watched, o);
    // Structure first (it removes most of the values at once), then values; again while either
    // still finds something, since a simpler value can free a feature and the reverse.
    for (bool changed = true; changed && s.budget_left();) {
        changed = s.structure();
        changed |= s.values();
    }
    Result r = s.result(before);
    ++r.runs;  // the first run, on the case as given
    r.candidate_seconds = watched.limit();
    // A backend that reads uninitialised memory or races may fail only sometimes: say so.
    for (int i = 0; i < 2 && r.stable; ++i, ++r.runs)
        r.stable = same_failure(first, watched(r.shrunk, "a rerun of the shrunk case"));
    return r;
}

}  // namespace

Result shrink_case(const golden::GoldenCase& failing, const Oracle& oracle, const Options& o) {
    WatchedOracle watched(oracle, o);
    return shrink_watched(failing, watched, o);
}

Result shrink_isolated(const golden::GoldenCase& failing, const OracleMaker& make, const Options& o) {
    OracleWorker worker(make);
    WatchedOracle watched(worker, o);
    return shrink_watched(failing, watched, o);
}

}  // namespace moe::shrink
