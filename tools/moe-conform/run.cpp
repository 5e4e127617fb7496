#include <chrono>
#include <ctime>
#include <iostream>

#include "commands.hpp"
#include "moe/backends/registry.hpp"
#include "moe/conformance/reports.hpp"
#include "moe/conformance/runner.hpp"
#include "moe/golden/suite.hpp"

namespace moe::conform_cli {

namespace {

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

// The device string as one shell word in the repro line.
std::string shell_quote(const std::string& s) {
    if (s.find_first_of(" '\"$\\") == std::string::npos) return s;
    std::string q = "'";
    for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return q + "'";
}

}  // namespace

int run(const RunCommand& c) {
    const auto set = backends::make_backends(c.backends, c.backend_libs, backends::BuiltinOptions{c.device});
    const std::vector<Backend*>& list = set.list;
    conformance::RunOptions o;
    o.files = c.suite.empty() ? c.cases : golden::suite_files(c.suite);
    o.filters = c.filters;
    o.tier = c.tier;
    o.threads = c.threads;
    o.progress = !c.quiet;
    for (const auto& lib : c.backend_libs) o.repro_command += " --backend-lib " + shell_quote(lib);
    if (!c.device.empty()) o.repro_command += " --device " + shell_quote(c.device);
    if (!c.expect.empty()) o.expectations = conformance::load_expectations(c.expect);

    conformance::RunInfo info;
    info.tool_version = "moe-conform 0.1.0";
    info.command_line = c.command_line;
    for (auto* b : list) info.backends.push_back(b->name());
    info.suite = c.suite.empty() ? "(files)" : c.suite;
    info.tier = c.tier;
    info.started_utc = utc_now();
    const auto start = std::chrono::steady_clock::now();
    const conformance::RunOutcome outcome = conformance::run_suite(o, list);
    info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    conformance::write_text_report(std::cout, info, outcome.results);
    if (!c.json.empty()) conformance::write_json_report(c.json, info, outcome.results);
    if (!c.junit.empty()) conformance::write_junit_report(c.junit, info, outcome.results);
    if (!c.html.empty()) conformance::write_html_report(c.html, info, outcome.results);

    for (const auto& e : outcome.input_errors) std::cerr << "moe-conform: error: " << e << "\n";
    if (!outcome.input_errors.empty())
        std::cerr << "moe-conform: " << outcome.input_errors.size()
                  << " golden file(s) could not be used; their cases were not compared\n";
    else if (outcome.results.empty())
        std::cerr << "moe-conform: error: no case matched the tier and filters\n";
    return conformance::run_exit_code(outcome);
}

}  // namespace moe::conform_cli
