// The selftest as an HTML page (spec/report-format.md, section 8): the mutation score, the
// correct backends, the mutants with their first catch, and the catch matrix, every mutant (and
// correct backend) by every case.
#include <map>
#include <sstream>

#include "html_page.hpp"
#include "moe/conformance/selftest.hpp"
#include "moe/conformance/text_file.hpp"

namespace moe::conformance {

namespace {

using html::escape;
using html::num;

// Matrix colours: a caught case (FAIL or ERROR), a case that passed, a skipped or not-run one.
constexpr const char* kCaught = "#e5534b";
constexpr const char* kPassed = "#aceebb";
constexpr const char* kOther = "#d0d7de";

const char* cell_color(Status s) {
    if (s == Status::fail || s == Status::error) return kCaught;
    if (s == Status::pass || s == Status::mistrusted) return kPassed;
    return kOther;
}

void matrix_row(std::ostringstream& o, const std::string& label, const std::vector<std::string>& cases,
                const std::vector<MatrixCell>& cells) {
    std::map<std::string, const MatrixCell*> by_case;
    for (const auto& c : cells) by_case.emplace(c.case_name, &c);
    o << "<tr><th class=\"row\">" << escape(label) << "</th>";
    for (const auto& name : cases) {
        const auto it = by_case.find(name);
        if (it == by_case.end()) {
            o << "<td style=\"background:#ffffff\" title=\"" << escape(name) << ": not run\"></td>";
            continue;
        }
        const MatrixCell& c = *it->second;
        o << "<td style=\"background:" << cell_color(c.status) << "\" title=\"" << escape(name) << ": "
          << status_name(c.status) << ", error/bound " << num(c.worst_ratio) << "\"></td>";
    }
    o << "</tr>\n";
}

void matrix(std::ostringstream& o, const SelftestReport& r) {
    o << "<h2>Catch matrix</h2>\n<p class=\"meta\">Rows: mutants, then the correct backends; columns: cases. "
         "<span style=\"background:" << kCaught << "\">&nbsp;&nbsp;&nbsp;</span> FAIL or ERROR (caught) "
         "<span style=\"background:" << kPassed << "\">&nbsp;&nbsp;&nbsp;</span> PASS "
         "<span style=\"background:" << kOther << "\">&nbsp;&nbsp;&nbsp;</span> SKIP. Hover a cell for its case.</p>\n"
      << "<div class=\"matrix\"><table class=\"matrix\"><tr><th></th>";
    for (const auto& c : r.cases) o << "<th class=\"case\">" << escape(c) << "</th>";
    o << "</tr>\n";
    for (const auto& m : r.mutants) matrix_row(o, m.name, r.cases, m.cells);
    for (const auto& c : r.correct) matrix_row(o, c.name + " (correct)", r.cases, c.cells);
    o << "</table></div>\n";
}

}  // namespace

void write_selftest_html(const std::string& file, const RunInfo& info, const SelftestReport& r) {
    std::ostringstream o;
    html::begin_page(o, "moe-conform selftest");
    html::run_info(o, info);
    char score[96];
    std::snprintf(score, sizeof score, "Mutation score %zu / %zu = %.1f %%", r.caught_mutants(), r.runnable_mutants(),
                  100.0 * r.mutation_score());
    o << "<h2 style=\"color:" << (r.passed() ? "#1a7f37" : "#cf222e") << "\">" << score << " &middot; "
      << (r.passed() ? "every correct backend passes" : "FAILED") << "</h2>\n";

    o << "<h2>Correct backends</h2>\n<table><tr><th>backend</th><th>verdict</th><th>passed</th><th>failed</th>"
         "<th>errors</th><th>skipped</th><th>worst error/bound</th></tr>\n";
    for (const auto& c : r.correct) {
        o << "<tr><td>" << escape(c.name) << "</td>";
        if (c.unavailable) {
            o << "<td colspan=\"6\">unavailable: " << escape(*c.unavailable) << "</td></tr>\n";
            continue;
        }
        o << "<td class=\"status\" style=\"color:" << (c.clean() ? "#1a7f37" : "#cf222e") << "\">"
          << (c.clean() ? "ok" : "PROBLEM") << "</td><td class=\"n\">" << c.summary.passed << "</td><td class=\"n\">"
          << c.summary.failed << "</td><td class=\"n\">" << c.summary.errors << "</td><td class=\"n\">"
          << c.summary.skipped << "</td><td class=\"n\">" << num(c.worst_ratio) << "</td></tr>\n";
    }
    o << "</table>\n<h2>Mutants</h2>\n<table><tr><th>mutant</th><th>family</th><th>verdict</th><th>cases</th>"
         "<th>first catch</th><th>the bug it plants</th></tr>\n";
    for (const auto& m : r.mutants) {
        o << "<tr><td>" << escape(m.name) << "</td><td>" << escape(m.family) << "</td>";
        if (m.unavailable) {
            o << "<td>SKIPPED</td><td colspan=\"2\">" << escape(*m.unavailable) << "</td>";
        } else {
            o << "<td class=\"status\" style=\"color:" << (m.caught() ? "#1a7f37" : "#cf222e") << "\">"
              << (m.caught() ? "caught" : "MISSED") << "</td><td class=\"n\">" << m.caught_by << " of " << m.cases
              << "</td><td>";
            if (m.first_catch) {
                o << escape(m.first_catch->case_name);
                if (m.first_catch->first_divergent_stage) o << " (stage " << escape(m.first_catch->first_divergent_stage->stage) << ")";
            }
            o << "</td>";
        }
        o << "<td>" << escape(m.description) << "</td></tr>\n";
    }
    o << "</table>\n";
    matrix(o, r);
    html::end_page(o);
    write_file_atomically(file, o.str());
}

}  // namespace moe::conformance
