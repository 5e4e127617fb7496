// The JSON report (spec/report-format.md, "JSON report"; schema spec/report.schema.json).
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "moe/conformance/reports.hpp"
#include "moe/conformance/text_file.hpp"
#include "json_fields.hpp"

namespace moe::conformance {

namespace {

// ordered_json keeps the keys in the documented order, which makes the file easier to read.
using json = nlohmann::ordered_json;


json element(const ElementReport& e) {
    return json{{"token", e.token}, {"feature", e.feature}, {"reference", json_real(e.reference)},
                {"got", json_real(e.got)},   {"bound", json_real(e.bound)}};
}

json metrics(const Metrics& m) {
    // At most 10, as Metrics promises and the schema requires.
    json violations = json::array();
    for (std::size_t i = 0; i < m.violations.size() && i < 10; ++i) violations.push_back(element(m.violations[i]));
    return json{{"elements", m.elements},
                {"over_bound", m.over_bound},
                {"max_abs_error", json_real(m.max_abs_error)},
                {"max_rel_error", json_real(m.max_rel_error)},
                {"max_ulps", json_real(m.max_ulps)},
                {"worst_ratio", json_real(m.worst_ratio)},
                {"worst", m.worst ? element(*m.worst) : json(nullptr)},
                {"violations", std::move(violations)}};
}

json stage(const std::optional<StageDivergence>& d) {
    if (!d) return nullptr;
    return json{{"stage", d->stage}, {"worst_ratio", json_real(d->worst_ratio)},
                {"token", d->token}, {"slot", d->slot},
                {"feature", d->feature}, {"reference", json_real(d->reference)},
                {"got", json_real(d->got)}, {"bound", json_real(d->bound)}};
}

// null unless the output failed with every returned stage within its bound (CaseResult): a
// reader that knows only first_divergent_stage still reads null there, as before.
json within_bound(const std::vector<std::pair<std::string, double>>& stages) {
    if (stages.empty()) return nullptr;
    json list = json::array();
    for (const auto& [name, ratio] : stages) list.push_back(json{{"stage", name}, {"worst_ratio", json_real(ratio)}});
    return list;
}

json skip_reasons_json(const std::vector<CaseResult>& results) {
    json list = json::array();
    for (const SkipGroup& g : skip_reasons(results))
        list.push_back(json{{"reason", g.reason}, {"count", g.count}, {"backends", g.backends}});
    return list;
}

// clamp_limit for GEMM2 alone: GEMM3 has none (resolve() leaves it 0).
json params(const std::optional<CaseParams>& p) {
    if (!p) return nullptr;
    const ResolvedParams& r = p->resolved;
    json j{{"expert_type", std::string(expert_type_name(p->expert_type))},
           {"convention", std::string(convention_name(p->convention))},
           {"swish_beta", json_real(r.swish_beta)}};
    if (p->expert_type == ExpertType::gemm2_bias_swiglu_clamp) j["clamp_limit"] = json_real(r.clamp_limit);
    j["gate_lane"] = r.gate_lane;
    j["weight_layout"] = std::string(weight_layout_name(r.weight_layout));
    j["routing_layout"] = std::string(routing_layout_name(r.routing_layout));
    return j;
}

json result(const CaseResult& r) {
    return json{{"case", r.case_name},
                {"file", r.file},
                {"backend", r.backend},
                {"data_type", r.data_type},
                {"compute_type", r.compute_type},
                {"storage_type", r.storage_type},
                {"dequant_type", r.dequant_type.empty() ? json(nullptr) : json(r.dequant_type)},
                {"exact", r.exact},
                {"params", params(r.params)},
                {"status", std::string(status_name(r.status))},
                {"reason", r.reason},
                {"ticket", r.ticket},
                {"seconds", json_real(r.seconds)},
                {"repro", r.repro},
                {"metrics", metrics(r.metrics)},
                {"first_divergent_stage", stage(r.first_divergent_stage)},
                {"stages_within_bound", within_bound(r.stages_within_bound)}};
}

}  // namespace

void write_json_report(const std::string& file, const RunInfo& info, const std::vector<CaseResult>& results) {
    const RunSummary s = summarize(results);
    json doc = json_run_header("moe-conform-report", info);
    doc["tier"] = info.tier;
    doc["backends"] = info.backends;
    // Only when given: what made a MISTRUSTED result fail this run (exit 1). A run without the
    // flag writes the report it always wrote.
    if (info.fail_on_mistrusted) doc["fail_on_mistrusted"] = true;
    doc["summary"] = json{{"total", s.total},         {"passed", s.passed}, {"failed", s.failed},
                          {"skipped", s.skipped},     {"xfail", s.xfailed}, {"xpass", s.xpassed},
                          {"mistrusted", s.mistrusted}, {"errors", s.errors}};
    // Beside the counts, not in them: summary stays all integers, as its readers sum it.
    doc["skip_reasons"] = skip_reasons_json(results);
    json list = json::array();
    for (const auto& r : results) list.push_back(result(r));
    doc["results"] = std::move(list);
    // Invalid UTF-8 in a message (a backend's exception text) becomes U+FFFD instead of throwing.
    std::string text = doc.dump(2, ' ', false, json::error_handler_t::replace);
    text += '\n';
    write_file_atomically(file, text);
}

}  // namespace moe::conformance
