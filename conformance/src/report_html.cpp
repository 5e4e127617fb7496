// The HTML report of a run (spec/report-format.md, section 8): one self-contained page with the
// counts per backend, every failure in detail (a heatmap of error/bound over [token, feature],
// the error/bound of every stage, the worst elements, the repro line), then every result.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "html_page.hpp"
#include "moe/conformance/reports.hpp"
#include "moe/conformance/text_file.hpp"

namespace moe::conformance {

namespace detail {
std::string after_stages_text(const CaseResult& r);  // report_text.cpp, shared with the details
}

namespace {

using html::escape;
using html::num;
using html::value;

constexpr std::size_t kMaxHeatmaps = 40;  // beyond these, failures are listed without one

bool is_failure(const CaseResult& r) {
    return r.status == Status::fail || r.status == Status::error || r.status == Status::xpass;
}

std::string status_cell(Status s) {
    return "<td class=\"status\" style=\"color:" + std::string(html::status_color(s)) + "\">" +
           std::string(status_name(s)) + "</td>";
}

// Cells of one colour band that follow each other in a row are drawn as one rectangle.
void heatmap(std::ostringstream& o, const RatioGrid& g) {
    const std::size_t side = std::max(g.rows, g.cols);
    const std::size_t cell = std::max<std::size_t>(4, std::min<std::size_t>(24, 512 / std::max<std::size_t>(side, 1)));
    const std::size_t left = 56, top = 18;
    const std::size_t w = left + g.cols * cell + 8, h = top + g.rows * cell + 22;
    o << "<svg class=\"heatmap\" width=\"" << w << "\" height=\"" << h << "\" viewBox=\"0 0 " << w << " " << h
      << "\" role=\"img\" aria-label=\"error/bound over tokens and features\">\n";
    o << "<text x=\"" << left << "\" y=\"12\" font-size=\"11\">features 0 .. " << g.features - 1
      << " &#8594;</text>\n<text x=\"0\" y=\"" << top + 10 << "\" font-size=\"11\">token 0</text>\n<text x=\"0\" y=\""
      << top + g.rows * cell << "\" font-size=\"11\">" << g.tokens - 1 << "</text>\n";
    for (std::size_t r = 0; r < g.rows; ++r) {
        for (std::size_t c = 0; c < g.cols;) {
            const std::size_t band = html::band_of(g.at(r, c));
            std::size_t end = c + 1;
            while (end < g.cols && html::band_of(g.at(r, end)) == band) ++end;
            o << "<rect x=\"" << left + c * cell << "\" y=\"" << top + r * cell << "\" width=\"" << (end - c) * cell
              << "\" height=\"" << cell << "\" fill=\"" << html::kBands[band].color << "\"/>";
            c = end;
        }
        o << "\n";
    }
    const std::size_t tokens_per_row = (g.tokens + g.rows - 1) / g.rows, features_per_col = (g.features + g.cols - 1) / g.cols;
    o << "<text x=\"" << left << "\" y=\"" << h - 6 << "\" font-size=\"11\">" << g.rows << " x " << g.cols
      << " cells, each the largest error/bound of up to " << tokens_per_row << " x " << features_per_col
      << " elements</text>\n</svg>\n<div class=\"legend\">error/bound:";
    for (const auto& b : html::kBands) o << "<span style=\"background:" << b.color << "\"></span>" << escape(b.label);
    o << "</div>\n";
}

void stages(std::ostringstream& o, const StageDivergence& d) {
    o << "<p>First divergent stage: <b>" << escape(d.stage) << "</b> at token " << d.token << ", slot " << d.slot
      << ", feature " << d.feature << ": reference " << value(d.reference) << ", got " << value(d.got) << ", bound "
      << num(d.bound) << " (" << num(d.worst_ratio) << " x bound)</p>\n";
    if (d.per_stage.empty()) return;
    o << "<table><tr><th>stage</th><th>worst error/bound</th></tr>\n";
    for (const auto& [stage, ratio] : d.per_stage)
        o << "<tr><td>" << escape(stage) << "</td><td class=\"n\" style=\"color:"
          << (ratio > 1.0 ? "#cf222e" : "#1a7f37") << "\">" << num(ratio) << "</td></tr>\n";
    o << "</table>\n";
}

// Every returned stage within its bound and the output not: where the error must enter, with the
// stages' headroom (a stage at 0.9 x bound is a weaker alibi than one at 0.01).
void after_stages(std::ostringstream& o, const CaseResult& r) {
    o << "<p>Stages: " << escape(detail::after_stages_text(r)) << "</p>\n";
    o << "<table><tr><th>stage</th><th>worst error/bound</th></tr>\n";
    for (const auto& [stage, ratio] : r.stages_within_bound)
        o << "<tr><td>" << escape(stage) << "</td><td class=\"n\" style=\"color:#1a7f37\">" << num(ratio)
          << "</td></tr>\n";
    o << "</table>\n";
}

void elements(std::ostringstream& o, const Metrics& m) {
    if (!m.worst && m.violations.empty()) return;
    o << "<table><tr><th></th><th>token</th><th>feature</th><th>reference</th><th>got</th><th>|diff|</th>"
         "<th>bound</th><th>error/bound</th></tr>\n";
    auto row = [&](const char* what, const ElementReport& e) {
        const double diff = std::fabs(e.got - e.reference);
        o << "<tr><td>" << what << "</td><td class=\"n\">" << e.token << "</td><td class=\"n\">" << e.feature
          << "</td><td class=\"n\">" << value(e.reference) << "</td><td class=\"n\">" << value(e.got)
          << "</td><td class=\"n\">" << num(diff) << "</td><td class=\"n\">" << num(e.bound)
          << "</td><td class=\"n\">" << num(e.bound > 0 ? diff / e.bound : diff > 0 ? INFINITY : 0.0)
          << "</td></tr>\n";
    };
    if (m.worst) row("worst", *m.worst);
    for (const auto& e : m.violations) row("over bound", e);
    o << "</table>\n";
}

void failure(std::ostringstream& o, const CaseResult& r, std::size_t index, bool with_heatmap) {
    o << "<section class=\"case\" id=\"r" << index << "\">\n<h3><span style=\"color:" << html::status_color(r.status)
      << "\">" << status_name(r.status) << "</span> " << escape(r.backend) << " &middot; " << escape(r.case_name)
      << "</h3>\n<p>" << escape(r.reason) << "</p>\n"
      << (r.ticket.empty() ? "" : "<p class=\"meta\">ticket: " + escape(r.ticket) + "</p>\n") << "<p class=\"meta\">"
      << escape(r.data_type) << " data, compute "
      << escape(r.compute_type) << ", storage " << escape(r.storage_type)
      << (r.dequant_type.empty() ? "" : ", dequant " + escape(r.dequant_type))
      << (r.exact ? "; exact case: zero tolerance" : "") << "</p>\n";
    if (r.params) o << "<p class=\"meta\">params: " << escape(params_text(*r.params)) << "</p>\n";
    if (r.metrics.ratio_grid && with_heatmap) heatmap(o, *r.metrics.ratio_grid);
    else if (r.metrics.ratio_grid) o << "<p class=\"meta\">(heatmap omitted: the first " << kMaxHeatmaps << " failures have one)</p>\n";
    if (r.first_divergent_stage) stages(o, *r.first_divergent_stage);
    if (!r.stages_within_bound.empty()) after_stages(o, r);
    elements(o, r.metrics);
    if (!r.repro.empty()) o << "<pre>" << escape(r.repro) << "</pre>\n";
    o << "</section>\n";
}

void counts(std::ostringstream& o, const std::vector<CaseResult>& results) {
    const Status order[] = {Status::pass, Status::fail, Status::skip, Status::xfail, Status::xpass, Status::mistrusted, Status::error};
    std::vector<std::string> backends;
    std::map<std::string, std::map<Status, std::size_t>> n, first;  // counts; first result's index
    for (std::size_t i = 0; i < results.size(); ++i) {
        const CaseResult& r = results[i];
        if (!n.count(r.backend)) backends.push_back(r.backend);
        if (++n[r.backend][r.status] == 1) first[r.backend][r.status] = i;
    }
    o << "<h2>Summary</h2>\n<p>" << escape(count_line(summarize(results))) << "</p>\n<table><tr><th>backend</th>";
    for (Status s : order) o << "<th>" << status_name(s) << "</th>";
    o << "</tr>\n";
    for (const auto& b : backends) {
        o << "<tr><td>" << escape(b) << "</td>";
        for (Status s : order) {
            const std::size_t k = n[b][s];
            o << "<td class=\"n\"" << (k ? std::string(" style=\"color:") + html::status_color(s) + "\"" : "") << ">";
            // With hundreds of failures in run order, a backend's first one is a click away.
            if (k && (s == Status::fail || s == Status::error || s == Status::xpass))
                o << "<a href=\"#r" << first[b][s] << "\" style=\"color:inherit\">" << k << "</a>";
            else
                o << k;
            o << "</td>";
        }
        o << "</tr>\n";
    }
    o << "</table>\n";
    // Why the skips were skipped: a supports() that over-declines shows as one large group.
    const std::vector<SkipGroup> groups = skip_reasons(results);
    if (groups.empty()) return;
    o << "<h3>Skipped, by reason</h3>\n<table><tr><th>results</th><th>reason</th><th>backends</th></tr>\n";
    for (const SkipGroup& g : groups) {
        std::string backends;
        for (const auto& b : g.backends) backends += (backends.empty() ? "" : ", ") + b;
        o << "<tr><td class=\"n\">" << g.count << "</td><td>" << escape(g.reason) << "</td><td>" << escape(backends)
          << "</td></tr>\n";
    }
    o << "</table>\n";
}

void all_results(std::ostringstream& o, const std::vector<CaseResult>& results) {
    o << "<h2>All results</h2>\n<table><tr><th>status</th><th>backend</th><th>case</th><th>type</th><th>max abs</th>"
         "<th>max rel</th><th>error/bound</th><th>time (s)</th><th>note</th></tr>\n";
    for (std::size_t i = 0; i < results.size(); ++i) {
        const CaseResult& r = results[i];
        const bool compared = r.status != Status::skip && r.status != Status::error && r.metrics.elements > 0;
        o << "<tr>" << status_cell(r.status) << "<td>" << escape(r.backend) << "</td><td>";
        if (is_failure(r)) o << "<a href=\"#r" << i << "\">" << escape(r.case_name) << "</a>";
        else o << escape(r.case_name);
        o << "</td><td>" << escape(r.data_type) << (r.compute_type.empty() ? "" : "/" + escape(r.compute_type))
          << "</td><td class=\"n\">" << (compared ? num(r.metrics.max_abs_error) : "-") << "</td><td class=\"n\">"
          << (compared ? num(r.metrics.max_rel_error) : "-") << "</td><td class=\"n\">"
          << (compared ? num(r.metrics.worst_ratio) : "-") << "</td><td class=\"n\">" << (compared ? num(r.seconds) : "-")
          << "</td><td>" << (r.status == Status::pass ? "" : escape(r.reason))
          << (r.ticket.empty() ? "" : " [" + escape(r.ticket) + "]") << "</td></tr>\n";
    }
    o << "</table>\n";
}

}  // namespace

void write_html_report(const std::string& file, const RunInfo& info, const std::vector<CaseResult>& results) {
    std::ostringstream o;
    html::begin_page(o, "moe-conform report");
    html::run_info(o, info);
    counts(o, results);
    std::size_t failures = 0, heatmaps = 0;
    for (const auto& r : results) failures += is_failure(r);
    o << "<h2>Failures (" << failures << ")</h2>\n";
    if (!failures) o << "<p>None.</p>\n";
    for (std::size_t i = 0; i < results.size(); ++i) {
        if (!is_failure(results[i])) continue;
        const bool map = results[i].metrics.ratio_grid && heatmaps < kMaxHeatmaps;
        heatmaps += map;
        failure(o, results[i], i, map);
    }
    all_results(o, results);
    html::end_page(o);
    write_file_atomically(file, o.str());
}

}  // namespace moe::conformance
