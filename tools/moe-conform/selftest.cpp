// selftest: prints the verdict of conformance::run_selftest over the built-in backends and every
// family's mutants, with the mutation score; --json writes the catch matrix.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "cli_checks.hpp"
#include "commands.hpp"
#include "device_check.hpp"
#include "output_paths.hpp"
#include "moe/backends/registry.hpp"
#include "moe/conformance/selftest.hpp"
#include "moe/conformance/shell_word.hpp"
#include "moe/golden/manifest.hpp"
#include "moe/golden/suite.hpp"
#include "moe/spec/error.hpp"

namespace moe::conform_cli {

namespace {

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

// --shard I/N for the selftest splits the work items (the correct backends, then the mutants, in
// order), not the cases: a mutant must meet the whole suite for "caught" to mean anything.
void keep_shard(const std::string& shard, std::vector<Backend*>& correct, std::vector<Mutant>& mutants) {
    if (shard.empty()) return;
    const auto [index, count] = golden::parse_shard(shard);
    std::size_t item = 0;
    std::vector<Backend*> kept_backends;
    for (Backend* b : correct)
        if (item++ % count == index - 1) kept_backends.push_back(b);
    std::vector<Mutant> kept_mutants;
    for (auto& m : mutants)
        if (item++ % count == index - 1) kept_mutants.push_back(std::move(m));
    correct = std::move(kept_backends);
    mutants = std::move(kept_mutants);
}

// --family: only the correct backends and mutants of the families named (each once: list_items).
void keep_families(const std::vector<std::string>& families, std::vector<Backend*>& correct,
                   std::vector<Mutant>& mutants) {
    if (families.empty()) return;
    const auto wanted = [&](const std::string& family) {
        return std::find(families.begin(), families.end(), family) != families.end();
    };
    correct.erase(std::remove_if(correct.begin(), correct.end(),
                                 [&](const Backend* b) { return !wanted(backends::backend_family(b->name())); }),
                  correct.end());
    mutants.erase(std::remove_if(mutants.begin(), mutants.end(), [&](const Mutant& m) { return !wanted(m.family); }),
                  mutants.end());
}

void print_correct(const conformance::SelftestReport& report) {
    std::cout << "Correct backends (must pass every case):\n";
    for (const auto& v : report.correct) {
        std::cout << "  " << std::left << std::setw(18) << v.name;
        if (v.unavailable) {
            std::cout << "unavailable: " << *v.unavailable << "\n";
            continue;
        }
        const auto& s = v.summary;
        std::cout << (v.clean() ? "ok      " : "PROBLEM ") << s.passed << " passed, " << s.failed << " failed, "
                  << s.errors << " errors, " << s.mistrusted << " mistrusted; worst error/bound "
                  << std::setprecision(3) << v.worst_ratio << "\n";
        for (const auto& r : v.problems)
            std::cout << "      " << conformance::status_name(r.status) << " " << r.case_name << ": " << r.reason << "\n";
    }
}

void print_mutants(const conformance::SelftestReport& report) {
    std::cout << "Mutants (each must be caught by at least one case):\n";
    std::size_t name_width = 28;  // the longest name and two spaces, at least
    for (const auto& m : report.mutants) name_width = std::max(name_width, m.name.size() + 2);
    for (const auto& m : report.mutants) {
        std::cout << "  " << std::left << std::setw(static_cast<int>(name_width)) << m.name;
        if (m.unavailable) {
            std::cout << "SKIPPED  " << *m.unavailable << "\n";
            continue;
        }
        std::cout << (m.caught() ? "caught  " : "MISSED  ") << std::right << std::setw(3) << m.caught_by << std::left
                  << " of " << m.cases
                  << " cases";
        if (m.first_catch) {
            std::cout << "  first: " << m.first_catch->case_name;
            if (m.first_catch->first_divergent_stage)
                std::cout << " (stage " << m.first_catch->first_divergent_stage->stage << ")";
        }
        std::cout << "\n";
    }
}

// A line on stderr as each backend or mutant finishes: a suite pass each, minutes in all.
void print_progress(std::size_t done, std::size_t total, const conformance::SelftestReport& so_far,
                    std::chrono::steady_clock::time_point start) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "selftest: [" << done << "/" << total << "] ";
    if (so_far.mutants.empty()) {
        const auto& v = so_far.correct.back();
        std::cerr << v.name << ": ";
        if (v.unavailable) std::cerr << "unavailable";
        else std::cerr << (v.clean() ? "ok" : "PROBLEM") << ", " << v.summary.passed << " passed";
    } else {
        const auto& m = so_far.mutants.back();
        std::cerr << m.name << ": ";
        if (m.unavailable) std::cerr << "SKIPPED";
        else if (m.caught()) std::cerr << "caught by " << m.caught_by << " of " << m.cases << " cases";
        else std::cerr << "MISSED: caught by none of " << m.cases << " cases";
    }
    std::cerr << " (" << std::fixed << std::setprecision(1) << s << " s)" << std::defaultfloat << std::endl;
}

}  // namespace

int selftest(const SelftestCommand& c) {
    // "--family loop,,cpu" is refused when the flag is read (moe::cli::list_check).
    const std::vector<std::string> families = cli::list_items("--family", c.families);
    if (!c.no_manifest && !manifest_agrees(c.suite, {}, "moe-conform")) return 2;
    const bool opencl_runs = families.empty() || std::find(families.begin(), families.end(), "opencl") != families.end();
    if (opencl_runs) check_opencl_environment();  // the opencl backend and its mutants would all be unavailable
    check_device_exists(c.device);
    std::string family_list;
    for (const auto& f : families) family_list += (family_list.empty() ? "" : ",") + f;
    refuse_unused_device(c.device, opencl_runs, "--family " + family_list);
    conformance::RunOptions o;
    o.files = golden::suite_files(c.suite);
    o.repro_command = c.tool + " run";
    // The reports must not replace what the selftest reads, nor each other: `--json` onto a golden
    // file of the suite replaced it, and `--json s.x --html s.x` left the HTML alone, both with exit 0.
    RunPaths paths{o.files, {{"--json", c.json}, {"--html", c.html}}, {}};
    paths.inputs.push_back((std::filesystem::path(c.suite) / golden::kManifestName).string());
    check_outputs_spare_inputs(paths);
    o.threads = c.threads;
    o.progress = false;

    std::vector<std::unique_ptr<Backend>> owned;
    std::vector<Backend*> correct;
    conformance::RunInfo info;
    info.tool_version = "moe-conform 0.1.0";
    info.command_line = c.command_line;
    info.suite = c.suite;
    info.tier = o.tier;
    info.started_utc = utc_now();
    const backends::BuiltinOptions options{c.device};
    for (const auto& name : backends::builtin_backend_names()) {
        owned.push_back(backends::make_builtin_backend(name, options));
        correct.push_back(owned.back().get());
    }
    std::vector<Mutant> mutants = backends::selftest_mutants(options);
    keep_families(families, correct, mutants);
    // The opencl backend's and its mutants' repro lines carry the device; run refuses it on others.
    if (!c.device.empty()) {
        for (const Backend* b : correct)
            if (backends::opencl_family(b->name())) o.repro_flags[b->name()] = " --device " + conformance::shell_word(c.device);
        for (const auto& m : mutants)
            if (m.family == "opencl") o.repro_flags["mutant:" + m.name] = " --device " + conformance::shell_word(c.device);
    }
    const std::size_t items = correct.size() + mutants.size();
    keep_shard(c.shard, correct, mutants);
    if (correct.empty() && mutants.empty()) {  // as run: a shard left with nothing compares nothing
        std::cerr << "moe-conform: selftest shard " << c.shard << " holds none of the " << items
                  << " correct backends and mutants: nothing to run here (exit 77)\n";
        return 77;
    }
    for (const Backend* b : correct) info.backends.push_back(b->name());
    const auto start = std::chrono::steady_clock::now();
    conformance::SelftestProgress progress;
    if (!c.quiet)
        progress = [start](std::size_t done, std::size_t total, const conformance::SelftestReport& so_far) {
            print_progress(done, total, so_far, start);
        };
    const auto report = conformance::run_selftest(o, correct, mutants, progress);
    info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!report.input_errors.empty()) {
        for (const auto& e : report.input_errors) std::cerr << "moe-conform: error: " << e << "\n";
        return 2;
    }

    print_correct(report);
    print_mutants(report);
    const std::size_t skipped = report.mutants.size() - report.runnable_mutants();
    std::cout << "selftest: " << report.caught_mutants() << " of " << report.runnable_mutants() << " mutants caught";
    if (skipped) std::cout << " (" << skipped << " skipped: backend unavailable)";
    std::cout << "; " << (report.passed() ? "all correct backends pass" : "FAILED") << "\n";
    if (report.runnable_mutants())
        std::cout << "mutation score: " << report.caught_mutants() << " / " << report.runnable_mutants() << " = "
                  << std::fixed << std::setprecision(1) << 100.0 * report.mutation_score() << " %\n";
    else
        std::cout << "mutation score: none (no mutant ran)\n";
    if (!c.json.empty()) conformance::write_selftest_json(c.json, info, report);
    if (!c.html.empty()) conformance::write_selftest_html(c.html, info, report);
    return report.passed() ? 0 : 1;
}

}  // namespace moe::conform_cli
