#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "moe/backends/registry.hpp"
#include "moe/conformance/reports.hpp"
#include "moe/conformance/runner.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/golden/manifest.hpp"
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

bool manifest_agrees(const std::string& suite, const std::vector<std::string>& cases, const char* tool) {
    std::vector<std::string> problems;
    if (!suite.empty()) {
        if (std::filesystem::exists(std::filesystem::path(suite) / golden::kManifestName)) problems = golden::manifest_problems(suite);
    } else {
        for (const auto& file : cases)
            if (auto p = golden::manifest_problem_for_file(file)) problems.push_back(*p);
    }
    for (const auto& p : problems) std::cerr << tool << ": error: " << p << "\n";
    if (!problems.empty())
        std::cerr << tool << ": error: the golden files do not match " << golden::kManifestName
                  << " (changed or damaged after it was written); nothing was run (--no-manifest skips this check)\n";
    return problems.empty();
}

int run(const RunCommand& c) {
    if (!c.suite.empty()) {
        // Temporary files of generators killed half-way are never cases (not *.h5); remove them.
        const auto stale = golden::remove_stale_temp_files(c.suite);
        if (!stale.empty())
            std::cerr << "moe-conform: removed " << stale.size() << " temporary file(s) of killed writers from "
                      << c.suite << "\n";
    }
    if (!c.no_manifest && !manifest_agrees(c.suite, c.cases, "moe-conform")) return 2;
    // Backends are made where the cases run (each worker process), never here before a fork.
    std::vector<conformance::BackendMaker> list;
    const std::vector<std::string> known = backends::builtin_backend_names();
    for (const auto& name : expand_backend_names(c.backends)) {
        if (std::find(known.begin(), known.end(), name) == known.end())
            backends::make_builtin_backend(name);  // throws InputError naming the built-in backends
        list.push_back({name, [name, device = c.device] {
                            return backends::make_builtin_backend(name, backends::BuiltinOptions{device});
                        }});
    }
    conformance::RunOptions o;
    o.files = c.suite.empty() ? c.cases : golden::suite_files(c.suite);
    o.filters = c.filters;
    o.tier = c.tier;
    o.threads = c.threads;
    o.progress = !c.quiet;
    o.max_memory = c.max_memory;
    o.check_stored_results = !c.trust_stored_results;
    o.isolate = !c.no_isolation;
    o.case_timeout = c.case_timeout;
    if (!c.device.empty()) o.repro_command += " --device " + shell_quote(c.device);
    if (!c.expect.empty()) o.expectations = conformance::load_expectations(c.expect);

    conformance::RunInfo info;
    info.tool_version = "moe-conform 0.1.0";
    info.command_line = c.command_line;
    for (const auto& b : list) info.backends.push_back(b.name);
    info.suite = c.suite.empty() ? "(files)" : c.suite;
    info.tier = c.tier;
    info.started_utc = utc_now();
    const auto start = std::chrono::steady_clock::now();
    const conformance::RunOutcome outcome = conformance::run_suite(o, list);
    info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    conformance::write_text_report(std::cout, info, outcome.results);
    if (!c.json.empty()) conformance::write_json_report(c.json, info, outcome.results);
    if (!c.junit.empty()) conformance::write_junit_report(c.junit, info, outcome.results);

    for (const auto& e : outcome.input_errors) std::cerr << "moe-conform: error: " << e << "\n";
    if (!outcome.input_errors.empty()) {
        std::cerr << "moe-conform: " << outcome.input_errors.size()
                  << " golden file(s) could not be used; their cases were not compared\n";
        return 2;
    }
    const auto s = conformance::summarize(outcome.results);
    if (s.total == 0) {
        std::cerr << "moe-conform: error: no case matched the tier and filters\n";
        return 2;
    }
    if (s.failed + s.errors + s.xpassed > 0) return 1;
    if (s.skipped == s.total) return 77;
    return 0;
}

}  // namespace moe::conform_cli
