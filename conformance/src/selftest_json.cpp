// The selftest's JSON document (spec/report-format.md, "Selftest JSON"; schema
// spec/selftest.schema.json): score, verdicts, and the catch matrix as one status list per row,
// aligned with the document's `cases`.
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "moe/conformance/selftest.hpp"
#include "moe/conformance/text_file.hpp"
#include "json_fields.hpp"

namespace moe::conformance {

namespace {

using json = nlohmann::ordered_json;


json optional_text(const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); }

// A row of the matrix: one status (and worst error/bound) per column, "NOT_RUN" where the row
// has no result for that case (an unavailable backend has none at all).
std::pair<json, json> row(const std::vector<std::string>& cases, const std::vector<MatrixCell>& cells) {
    std::map<std::string, const MatrixCell*> by_case;
    for (const auto& c : cells) by_case.emplace(c.case_name, &c);
    json statuses = json::array(), ratios = json::array();
    if (cells.empty()) return {statuses, ratios};
    for (const auto& name : cases) {
        auto it = by_case.find(name);
        statuses.push_back(it == by_case.end() ? std::string("NOT_RUN") : std::string(status_name(it->second->status)));
        ratios.push_back(it == by_case.end() ? json(nullptr) : json_real(it->second->worst_ratio));
    }
    return {statuses, ratios};
}

json summary(const RunSummary& s) {
    return json{{"total", s.total},       {"passed", s.passed},   {"failed", s.failed},
                {"skipped", s.skipped},   {"xfail", s.xfailed},   {"xpass", s.xpassed},
                {"mistrusted", s.mistrusted}, {"errors", s.errors}};
}

}  // namespace

void write_selftest_json(const std::string& file, const RunInfo& info, const SelftestReport& r) {
    json doc = json_run_header("moe-selftest", info);
    doc["passed"] = r.passed();
    doc["score"] = json{{"caught", r.caught_mutants()},
                        {"runnable", r.runnable_mutants()},
                        {"skipped", r.mutants.size() - r.runnable_mutants()},
                        {"value", json_real(r.mutation_score())}};
    doc["cases"] = r.cases;
    json correct = json::array();
    for (const auto& v : r.correct) {
        auto [statuses, ratios] = row(r.cases, v.cells);
        json problems = json::array();
        for (const auto& p : v.problems)
            problems.push_back(json{{"case", p.case_name}, {"status", std::string(status_name(p.status))},
                                    {"reason", p.reason}, {"repro", p.repro}});
        correct.push_back(json{{"backend", v.name},
                               {"unavailable", optional_text(v.unavailable)},
                               {"clean", v.clean()},
                               {"worst_ratio", json_real(v.worst_ratio)},
                               {"summary", summary(v.summary)},
                               {"problems", std::move(problems)},
                               {"statuses", std::move(statuses)},
                               {"worst_ratios", std::move(ratios)}});
    }
    doc["correct"] = std::move(correct);
    json mutants = json::array();
    for (const auto& m : r.mutants) {
        auto [statuses, ratios] = row(r.cases, m.cells);
        json first = nullptr;
        if (m.first_catch) {
            const CaseResult& c = *m.first_catch;
            first = json{{"case", c.case_name},
                         {"status", std::string(status_name(c.status))},
                         {"reason", c.reason},
                         {"stage", c.first_divergent_stage ? json(c.first_divergent_stage->stage) : json(nullptr)},
                         {"repro", c.repro}};
        }
        mutants.push_back(json{{"name", m.name},
                               {"family", m.family},
                               {"description", m.description},
                               {"unavailable", optional_text(m.unavailable)},
                               {"caught", !m.unavailable && m.caught()},
                               {"caught_by", m.caught_by},
                               {"cases_run", m.cases},
                               {"first_catch", std::move(first)},
                               {"statuses", std::move(statuses)},
                               {"worst_ratios", std::move(ratios)}});
    }
    doc["mutants"] = std::move(mutants);
    // Invalid UTF-8 in a case name (golden files are untrusted) becomes U+FFFD instead of throwing.
    write_file_atomically(file, doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

}  // namespace moe::conformance
