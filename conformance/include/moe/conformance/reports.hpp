#pragma once
// Three views of a run's results: a text table for people, JSON for tools and trend tracking,
// JUnit XML for CI dashboards. spec/report-format.md documents all three; spec/report.schema.json
// is the JSON schema.
#include <iosfwd>
#include <string>
#include <vector>

#include "moe/conformance/results.hpp"

namespace moe::conformance {

// What the run was: written at the top of every report.
struct RunInfo {
    std::string tool_version;           // "moe-conform 0.1.0"
    std::string command_line;           // as invoked
    std::vector<std::string> backends;  // names, in run order
    std::string suite;                  // folder or "(files)"
    std::string tier;                   // quick | ci | full
    std::string started_utc;            // ISO 8601
    double seconds = 0;                 // wall time of the whole run
    // --fail-on-mistrusted: a MISTRUSTED result fails this run (fails_run), and every report says
    // so where it counts one; false leaves the reports exactly as they were before the flag.
    bool fail_on_mistrusted = false;
};

// What the reports say of MISTRUSTED results that fail the run (RunInfo::fail_on_mistrusted):
// the text's closing line and each JUnit <failure> name the flag, so that a log or a dashboard
// showing "0 failed" and exit 1 says why.
inline constexpr char kMistrustedFailsTheRun[] = "MISTRUSTED fails the run (--fail-on-mistrusted)";

// The table (one row per result), then the details of every result that fails the run
// (fails_run: FAIL/ERROR/XPASS, and MISTRUSTED under info.fail_on_mistrusted; at most 10
// violating elements each, the first divergent stage, the repro line), then the count line
// (closing_line).
void write_text_report(std::ostream& out, const RunInfo& info, const std::vector<CaseResult>& results);

// The final plain line, e.g. "96 passed, 0 failed, 2 skipped" (always these three counts, then
// the non-zero ones among xfail, xpass, mistrusted, errors).
std::string count_line(const RunSummary& s);
// The text report's last line: the count line, and when MISTRUSTED results fail the run
// (info.fail_on_mistrusted) the flag that made them fail, so the log says why it exits 1.
std::string closing_line(const RunSummary& s, const RunInfo& info);

// JSON document (schema: spec/report.schema.json). Written atomically to `file`.
void write_json_report(const std::string& file, const RunInfo& info, const std::vector<CaseResult>& results);

// JUnit XML: <testsuites> root, one <testsuite> per backend, one <testcase> per case; skipped,
// xfail and mistrusted as <skipped message=reason/>, fail/xpass as <failure>, error as <error>
// (mistrusted as <failure> naming the flag under info.fail_on_mistrusted); metrics as
// <properties>. Written atomically to `file`.
void write_junit_report(const std::string& file, const RunInfo& info, const std::vector<CaseResult>& results);

// One self-contained HTML page (inline CSS and SVG, no script, nothing fetched): the counts per
// backend; every FAIL, ERROR and XPASS with a heatmap of error/bound over [token, feature]
// (Metrics::ratio_grid), the error/bound of every stage, the worst elements and the repro line;
// then every result. Written atomically to `file`.
void write_html_report(const std::string& file, const RunInfo& info, const std::vector<CaseResult>& results);

}  // namespace moe::conformance
