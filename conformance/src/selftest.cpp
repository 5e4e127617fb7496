#include "moe/conformance/selftest.hpp"

#include <algorithm>

namespace moe::conformance {

std::size_t SelftestReport::runnable_mutants() const {
    return static_cast<std::size_t>(
        std::count_if(mutants.begin(), mutants.end(), [](const MutantVerdict& m) { return !m.unavailable; }));
}

std::size_t SelftestReport::caught_mutants() const {
    return static_cast<std::size_t>(std::count_if(mutants.begin(), mutants.end(),
                                                  [](const MutantVerdict& m) { return !m.unavailable && m.caught(); }));
}

double SelftestReport::mutation_score() const {
    const std::size_t runnable = runnable_mutants();
    return runnable ? static_cast<double>(caught_mutants()) / static_cast<double>(runnable) : 0.0;
}

namespace {

MatrixCell cell(const CaseResult& r) { return {r.case_name, r.status, r.metrics.worst_ratio}; }

// The matrix's columns come from the first backend that ran: every backend runs the same files.
void note_cases(SelftestReport& report, const std::vector<CaseResult>& results) {
    if (!report.cases.empty()) return;
    for (const auto& r : results) report.cases.push_back(r.case_name);
}

}  // namespace

bool SelftestReport::passed() const {
    if (!input_errors.empty()) return false;
    for (const auto& c : correct)
        if (!c.unavailable && !c.clean()) return false;
    return caught_mutants() == runnable_mutants();
}

SelftestReport run_selftest(const RunOptions& o, const std::vector<Backend*>& correct,
                            const std::vector<Mutant>& mutants, const SelftestProgress& progress) {
    SelftestReport report;
    const std::size_t total = correct.size() + mutants.size();
    const auto done = [&] {
        if (progress) progress(report.correct.size() + report.mutants.size(), total, report);
    };
    for (Backend* b : correct) {
        CorrectBackendVerdict v;
        v.name = b->name();
        const Availability a = b->availability();
        if (!a.available) {
            v.unavailable = a.reason;
            report.correct.push_back(std::move(v));
            done();
            continue;
        }
        RunOutcome outcome = run_suite(o, {b});
        if (!outcome.input_errors.empty()) {
            report.input_errors = std::move(outcome.input_errors);
            return report;
        }
        v.summary = summarize(outcome.results);
        note_cases(report, outcome.results);
        for (auto& r : outcome.results) {
            v.cells.push_back(cell(r));
            v.worst_ratio = std::max(v.worst_ratio, r.metrics.worst_ratio);
            // MISTRUSTED is a pass that proves little (a dense backend's all-NaN output where the
            // dense reading is NaN everywhere): not a fault of the backend.
            if (r.status != Status::pass && r.status != Status::skip && r.status != Status::mistrusted)
                v.problems.push_back(std::move(r));
        }
        report.correct.push_back(std::move(v));
        done();
    }
    for (const auto& m : mutants) {
        MutantVerdict v;
        v.name = m.name;
        v.family = m.family;
        v.description = m.description;
        const auto b = m.make();
        const Availability a = b->availability();
        if (!a.available) {
            v.unavailable = a.reason;
            report.mutants.push_back(std::move(v));
            done();
            continue;
        }
        RunOutcome outcome = run_suite(o, {b.get()});
        if (!outcome.input_errors.empty()) {
            report.input_errors = std::move(outcome.input_errors);
            return report;
        }
        v.cases = outcome.results.size();
        note_cases(report, outcome.results);
        for (auto& r : outcome.results) {
            v.cells.push_back(cell(r));
            if (r.status != Status::fail && r.status != Status::error) continue;
            if (!v.first_catch) v.first_catch = r;
            ++v.caught_by;
        }
        report.mutants.push_back(std::move(v));
        done();
    }
    return report;
}

}  // namespace moe::conformance
