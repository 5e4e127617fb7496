// What run and check print and write once the runner is done: the text report, the JSON and
// JUnit files, the input errors, and the exit code.
#include <ctime>
#include <iostream>

#include "commands.hpp"
#include "moe/conformance/reports.hpp"

namespace moe::conform_cli {

conformance::RunInfo make_run_info(const std::string& command_line, const std::vector<std::string>& backends,
                                   const std::string& suite, const SuiteRunFlags& flags) {
    conformance::RunInfo info;
    info.tool_version = "moe-conform 0.1.0";
    info.command_line = command_line;
    info.backends = backends;
    info.suite = suite;
    info.tier = flags.tier;
    info.fail_on_mistrusted = flags.fail_on_mistrusted;
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    info.started_utc = buf;
    return info;
}

namespace {

// The --json, --junit and --html files that were asked for.
void write_report_files(const conformance::RunInfo& info, const std::vector<conformance::CaseResult>& results,
                        const ReportFiles& files) {
    if (!files.json.empty()) conformance::write_json_report(files.json, info, results);
    if (!files.junit.empty()) conformance::write_junit_report(files.junit, info, results);
    if (!files.html.empty()) conformance::write_html_report(files.html, info, results);
}

}  // namespace

int report_outcome(const conformance::RunInfo& info, const conformance::RunOutcome& outcome, const ReportFiles& files) {
    conformance::write_text_report(std::cout, info, outcome.results);
    const int code = conformance::run_exit_code(outcome, info.fail_on_mistrusted);
    // The count line above reads like a verdict to a log parser; an input error makes it none.
    if (!outcome.input_errors.empty())
        std::cout << "NOT A VERDICT: " << outcome.input_errors.size()
                  << " golden file(s) could not be used (exit 2); the counts above leave their cases out\n";
    // Exit 2 (a golden file that could not be used, no case matched): no report file, which a
    // dashboard would read as a clean run of the cases it lists (spec/report-format.md).
    if (code != 2) write_report_files(info, outcome.results, files);
    for (const auto& e : outcome.input_errors) std::cerr << "moe-conform: error: " << e << "\n";
    if (!outcome.input_errors.empty())
        std::cerr << "moe-conform: " << outcome.input_errors.size()
                  << " golden file(s) could not be used; their cases were not compared\n";
    else if (outcome.results.empty())
        std::cerr << "moe-conform: error: no case matched the tier and filters\n";
    if (code == 2 && !(files.json.empty() && files.junit.empty() && files.html.empty()))
        std::cerr << "moe-conform: no report file written (exit 2)\n";
    return code;
}

int report_empty_shard(const conformance::RunInfo& info, const ReportFiles& files) {
    write_report_files(info, {}, files);
    return 77;
}

}  // namespace moe::conform_cli
