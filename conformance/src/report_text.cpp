// The text report (spec/report-format.md, "Text report"): header, one table row per result, a
// details block for every FAIL/ERROR/XPASS, the repro lines of the failures, and the count line
// last. Also defines the details block the JUnit writer embeds in <failure>/<error>.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "moe/conformance/reports.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/spec/printable.hpp"
#include "number_text.hpp"

namespace moe::conformance {

namespace detail {

// Shared with report_junit.cpp (declared there; no header of its own on purpose: these are
// implementation details of the three writers).
void write_case_details(std::ostream& out, const CaseResult& r);
bool was_compared(const CaseResult& r);
std::string after_stages_text(const CaseResult& r);

// A case was compared when its status says the backend produced an output that was checked
// and at least one element was compared. Skips and errors never were.
bool was_compared(const CaseResult& r) {
    return r.status != Status::skip && r.status != Status::error && r.metrics.elements > 0;
}

}  // namespace detail

namespace {

constexpr std::size_t kMaxViolationsShown = 10;
constexpr std::size_t kMaxReprosShown = 10;
constexpr std::size_t kMaxSkipReasonsShown = 10;
constexpr std::size_t kMaxSkipReasonColumns = 100;  // longer reasons are cut, with "..."

using number_text::formatted;  // the reports' number formatting (number_text.hpp)
using number_text::value;      // reference / got values

std::string err(double v) { return formatted("%.2e", v); }     // errors and bounds
std::string ratio(double v) { return formatted("%.3g", v); }   // error/bound ratios
std::string ulps(double v) { return formatted("%.4g", v); }    // ulps: "4096", "0.5", "1.235e+05"

// One line: control characters (newlines in an error message) become spaces, runs collapse.
// What else a terminal acts on (C1 controls such as U+009B, a CSI; bidirectional overrides) and
// invalid UTF-8 are escaped as printable() escapes them. A backslash stays: the note is read, not
// matched, and may quote a message printable() already escaped.
std::string one_line(const std::string& s) {
    std::string out;
    bool space = false;
    for (std::size_t i = 0; i < s.size();) {
        const auto u = static_cast<unsigned char>(s[i]);
        if (u < 0x20 || u == 0x7f || u == ' ') {
            space = !out.empty();
            ++i;
            continue;
        }
        if (space) out += ' ';
        space = false;
        if (u < 0x80) {
            out += s[i++];
            continue;
        }
        // A run of non-ASCII bytes decodes as it would in place (no UTF-8 sequence holds an
        // ASCII byte), and holds no backslash.
        std::size_t end = i;
        while (end < s.size() && static_cast<unsigned char>(s[end]) >= 0x80) ++end;
        out += moe::printable(std::string_view(s).substr(i, end - i));
        i = end;
    }
    return out;
}

// The last table column: why a row is not a plain PASS.
std::string note(const CaseResult& r) {
    std::string n = one_line(r.reason);
    if (!r.ticket.empty()) n += (n.empty() ? "" : " ") + ("[" + one_line(r.ticket) + "]");
    return n;
}

// Writes `text` indented by `indent`, continuation lines included.
void write_indented(std::ostream& out, const std::string& indent, const std::string& text) {
    std::size_t start = 0;
    while (true) {
        const std::size_t nl = text.find('\n', start);
        std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        out << indent << line << '\n';
        if (nl == std::string::npos) break;
        start = nl + 1;
        if (start == text.size()) break;
    }
}

// Columns on a terminal, for text printable() has passed: a character each, so a case named in
// UTF-8 ("gamma" as one Greek letter: two bytes) does not push the columns after it out of line.
// (East Asian wide characters take two columns; they are rare in case names and left uncounted.)
std::size_t columns(const std::string& s) {
    std::size_t n = 0;
    for (const char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;  // not a continuation byte
    return n;
}

std::string pad_right(const std::string& s, std::size_t w) {
    const std::size_t n = columns(s);
    return n >= w ? s : s + std::string(w - n, ' ');
}
std::string pad_left(const std::string& s, std::size_t w) {
    const std::size_t n = columns(s);
    return n >= w ? s : std::string(w - n, ' ') + s;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
    return out;
}

// At most `n` columns, cut at a character boundary (never inside a UTF-8 sequence or a \xNN
// escape one_line() wrote) and marked "...".
std::string truncated(const std::string& s, std::size_t n) {
    if (columns(s) <= n) return s;
    std::size_t at = 0, cols = 0;
    while (at < s.size()) {
        std::size_t len = 1, width = 1;
        if (s[at] == '\\' && at + 4 <= s.size() && s[at + 1] == 'x') {
            len = width = 4;
        } else {
            while (at + len < s.size() && (static_cast<unsigned char>(s[at + len]) & 0xC0) == 0x80) ++len;
        }
        if (cols + width > n - 3) break;
        cols += width;
        at += len;
    }
    return s.substr(0, at) + "...";
}

// The Summary's "skipped by reason:" block: why a run skipped what it skipped.
void write_skip_reasons(std::ostream& out, const std::vector<CaseResult>& results) {
    const std::vector<SkipGroup> groups = skip_reasons(results);
    if (groups.empty()) return;
    out << "skipped by reason:\n";
    const std::size_t shown = std::min(groups.size(), kMaxSkipReasonsShown);
    std::size_t width = 0;
    for (std::size_t i = 0; i < shown; ++i) width = std::max(width, std::to_string(groups[i].count).size());
    for (std::size_t i = 0; i < shown; ++i) {
        const std::string reason = one_line(groups[i].reason);
        out << "  " << pad_left(std::to_string(groups[i].count), width) << " x "
            << (reason.empty() ? "(no reason given)" : '"' + truncated(reason, kMaxSkipReasonColumns) + '"') << '\n';
    }
    if (groups.size() > shown) {
        std::size_t rest = 0;
        for (std::size_t i = shown; i < groups.size(); ++i) rest += groups[i].count;
        const std::size_t more = groups.size() - shown;
        out << "  ... and " << more << " more reason" << (more == 1 ? "" : "s") << " (" << rest << " result"
            << (rest == 1 ? "" : "s") << ")\n";
    }
}

}  // namespace

namespace detail {

// For a failing output whose returned stages are all within bound: where the error must enter.
// Stages the backend did not return after the last one it did are named as suspects too.
std::string after_stages_text(const CaseResult& r) {
    std::vector<std::string> compared, later;
    for (const auto& st : r.stages_within_bound) compared.push_back(st.first);
    if (r.params) {
        const std::vector<std::string> pipeline = reference::stage_names(r.params->expert_type);
        const auto last = std::find(pipeline.begin(), pipeline.end(), compared.back());
        if (last != pipeline.end()) later.assign(last + 1, pipeline.end());
    }
    return join(compared, ", ") + " within bound; the divergence is after them (" +
           (later.empty() ? "" : join(later, ", ") + ", which the backend did not return; ") +
           "routing weights, the sum over top-k, or the output's rounding)";
}

void write_case_details(std::ostream& out, const CaseResult& r) {
    out << status_name(r.status) << ' ' << r.backend << ' ' << r.case_name;
    if (!r.file.empty()) out << " (" << r.file << ')';
    out << '\n';
    if (!r.reason.empty()) {
        const bool multiline = r.reason.find('\n') != std::string::npos;
        const char* label = r.status == Status::error ? "error" : "reason";
        if (multiline) {
            out << "  " << label << ":\n";
            write_indented(out, "    ", r.reason);
        } else {
            out << "  " << label << ": " << r.reason << '\n';
        }
    }
    if (!r.ticket.empty()) out << "  ticket: " << r.ticket << '\n';
    // A case that never ran (skipped, crashed, timed out) has no declared precision: "-".
    const auto known = [](const std::string& t) { return t.empty() ? std::string("-") : t; };
    out << "  types: data " << known(r.data_type) << ", compute " << known(r.compute_type) << ", storage "
        << known(r.storage_type) << (r.dequant_type.empty() ? "" : ", dequant " + r.dequant_type)
        << (r.exact ? ", exact comparison" : "") << '\n';
    // The op's parameters: the types and element tables do not say why a kernel with a constant
    // compiled in (SiLU's beta 1, GPT-OSS's 1.702 and 7.0) fails, these do.
    if (r.params) out << "  params: " << params_text(*r.params) << '\n';

    const Metrics& m = r.metrics;
    if (r.status != Status::error && m.elements > 0) {
        char pct[32];
        std::snprintf(pct, sizeof pct, "%.2f", 100.0 * static_cast<double>(m.over_bound) / static_cast<double>(m.elements));
        out << "  " << m.over_bound << " of " << m.elements << " elements outside their bound (" << pct << "%)\n";
        out << "  max abs error " << err(m.max_abs_error) << ", max rel error " << err(m.max_rel_error)
            << ", max ulps " << ulps(m.max_ulps) << ", worst error/bound " << ratio(m.worst_ratio) << '\n';
        if (m.worst) {
            const ElementReport& w = *m.worst;
            out << "  worst element: token " << w.token << ", feature " << w.feature << ": reference "
                << value(w.reference) << ", got " << value(w.got) << ", bound " << err(w.bound) << ", ratio "
                << ratio(m.worst_ratio) << '\n';
        }
        if (!m.violations.empty()) {
            const std::size_t shown = std::min(m.violations.size(), kMaxViolationsShown);
            out << "  violations (first " << shown << " of " << std::max(m.over_bound, m.violations.size())
                << "):\n";
            const std::size_t wi = 8, wv = 16, we = 10;
            out << "    " << pad_left("token", wi) << "  " << pad_left("feature", wi) << "  "
                << pad_left("reference", wv) << "  " << pad_left("got", wv) << "  " << pad_left("|diff|", we)
                << "  " << pad_left("bound", we) << '\n';
            for (std::size_t i = 0; i < shown; ++i) {
                const ElementReport& v = m.violations[i];
                out << "    " << pad_left(std::to_string(v.token), wi) << "  "
                    << pad_left(std::to_string(v.feature), wi) << "  " << pad_left(value(v.reference), wv) << "  "
                    << pad_left(value(v.got), wv) << "  " << pad_left(err(std::fabs(v.got - v.reference)), we)
                    << "  " << pad_left(err(v.bound), we) << '\n';
            }
        }
    }
    if (r.first_divergent_stage) {
        const StageDivergence& d = *r.first_divergent_stage;
        out << "  first divergent stage: " << d.stage << " at token " << d.token << ", slot " << d.slot
            << ", feature " << d.feature << ": reference " << value(d.reference) << ", got " << value(d.got)
            << ", bound " << err(d.bound) << ", ratio " << ratio(d.worst_ratio) << '\n';
    }
    if (!r.stages_within_bound.empty()) out << "  stages: " << after_stages_text(r) << '\n';
    out << "  repro: " << (r.repro.empty() ? "(none recorded)" : r.repro) << '\n';
}

}  // namespace detail

std::string count_line(const RunSummary& s) {
    std::string line = std::to_string(s.passed) + " passed, " + std::to_string(s.failed) + " failed, " +
                       std::to_string(s.skipped) + " skipped";
    if (s.xfailed) line += ", " + std::to_string(s.xfailed) + " xfail";
    if (s.xpassed) line += ", " + std::to_string(s.xpassed) + " xpass";
    if (s.mistrusted) line += ", " + std::to_string(s.mistrusted) + " mistrusted";
    if (s.errors) line += ", " + std::to_string(s.errors) + " errors";
    return line;
}

std::string closing_line(const RunSummary& s, const RunInfo& info) {
    // On the count line itself, which stays the last line a log parser reads: its counts are
    // unchanged, and the words after them say why a run with "0 failed" exits 1.
    if (!info.fail_on_mistrusted || s.mistrusted == 0) return count_line(s);
    return count_line(s) + "; " + kMistrustedFailsTheRun;
}

void write_text_report(std::ostream& out, const RunInfo& info, const std::vector<CaseResult>& results) {
    // Header.
    out << (info.tool_version.empty() ? std::string("moe-conform") : info.tool_version) << '\n';
    out << "started:  " << info.started_utc << '\n';
    out << "suite:    " << info.suite << '\n';
    out << "tier:     " << info.tier << '\n';
    out << "backends: " << join(info.backends, ", ") << '\n';
    if (!info.command_line.empty()) out << "command:  " << info.command_line << '\n';
    out << '\n';

    // Table.
    enum Col { kStatus, kBackend, kCase, kType, kAbs, kRel, kUlps, kRatio, kTime, kNote, kCols };
    static const char* const kHeads[kCols] = {"STATUS",   "BACKEND",  "CASE",      "TYPE",    "MAX_ABS",
                                              "MAX_REL", "MAX_ULPS", "ERR/BOUND", "TIME(S)", "NOTE"};
    static const bool kRightAligned[kCols] = {false, false, false, false, true, true, true, true, true, false};
    std::vector<std::vector<std::string>> rows;
    rows.reserve(results.size());
    for (const auto& r : results) {
        std::vector<std::string> row(kCols, "-");
        row[kStatus] = std::string(status_name(r.status));
        row[kBackend] = r.backend;
        row[kCase] = r.case_name;
        row[kType] = (r.data_type.empty() ? "-" : r.data_type) + "/" + (r.compute_type.empty() ? "-" : r.compute_type);
        if (detail::was_compared(r)) {
            row[kAbs] = err(r.metrics.max_abs_error);
            row[kRel] = err(r.metrics.max_rel_error);
            row[kUlps] = ulps(r.metrics.max_ulps);
            row[kRatio] = ratio(r.metrics.worst_ratio);
        }
        if (r.status != Status::skip) row[kTime] = formatted("%.3f", r.seconds);
        row[kNote] = r.status == Status::pass ? "" : note(r);
        rows.push_back(std::move(row));
    }
    std::size_t width[kCols];
    for (int c = 0; c < kCols; ++c) {
        width[c] = std::string(kHeads[c]).size();
        for (const auto& row : rows) width[c] = std::max(width[c], columns(row[c]));
    }
    auto write_row = [&](const std::vector<std::string>& cells) {
        std::string line;
        for (int c = 0; c < kCols; ++c) {
            if (c) line += "  ";
            if (c == kNote)
                line += cells[c];
            else
                line += kRightAligned[c] ? pad_left(cells[c], width[c]) : pad_right(cells[c], width[c]);
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out << line << '\n';
    };
    write_row(std::vector<std::string>(kHeads, kHeads + kCols));
    if (rows.empty()) out << "(no results)\n";
    for (const auto& row : rows) write_row(row);

    // Details of what went wrong.
    std::vector<const CaseResult*> failures;
    for (const auto& r : results)
        if (fails_run(r.status, info.fail_on_mistrusted)) failures.push_back(&r);
    if (!failures.empty()) {
        out << "\nDetails\n";
        for (const CaseResult* r : failures) {
            out << '\n';
            detail::write_case_details(out, *r);
        }
    }

    // Summary.
    const RunSummary s = summarize(results);
    out << "\nSummary\n";
    char secs[64];
    std::snprintf(secs, sizeof secs, "%.2f", std::isfinite(info.seconds) ? info.seconds : 0.0);
    out << s.total << (s.total == 1 ? " result" : " results") << " in " << secs << " s\n";
    if (!failures.empty()) {
        out << "rerun the failures:\n";
        const std::size_t shown = std::min(failures.size(), kMaxReprosShown);
        for (std::size_t i = 0; i < shown; ++i) {
            const CaseResult& r = *failures[i];
            if (r.repro.empty())
                out << "  (no repro recorded: " << status_name(r.status) << ' ' << r.backend << ' ' << r.case_name
                    << ")\n";
            else
                out << "  " << r.repro << '\n';
        }
        if (failures.size() > shown) out << "  ... and " << failures.size() - shown << " more (see Details)\n";
    }
    // Just above the count line, which stays the last line a log parser reads.
    write_skip_reasons(out, results);
    out << closing_line(s, info) << '\n';
}

}  // namespace moe::conformance
