#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "child_process.hpp"
#include "commands.hpp"
#include "device_check.hpp"
#include "cli_checks.hpp"
#include "output_paths.hpp"
#include "moe/backends/registry.hpp"
#include "moe/conformance/reports.hpp"
#include "moe/conformance/result_recorder.hpp"
#include "moe/conformance/runner.hpp"
#include "moe/conformance/shell_word.hpp"
#include "moe/conformance/text_file.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/golden/manifest.hpp"
#include "moe/golden/suite.hpp"
#include "moe/shrink/case_in_suite.hpp"
#include "moe/spec/error.hpp"

namespace moe::conform_cli {

bool cases_exist(const std::vector<std::string>& cases, const char* tool) {
    bool all = true;
    for (const auto& file : cases) {
        try {
            shrink::check_case_exists(file);
        } catch (const InputError& e) {
            std::cerr << tool << ": error: " << e.what() << "\n";  // each one: a list may hold several typos
            all = false;
        }
    }
    return all;
}

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
        std::cerr << tool << ": error: the golden files "
                  << (suite.empty() ? std::string() : "of " + golden::printable(suite) + " ") << "do not match "
                  << golden::kManifestName
                  << " (changed or damaged after it was written); nothing was run (--no-manifest skips this check)\n";
    return problems.empty();
}

int run(const RunCommand& c) {
    if (!cases_exist(c.cases, "moe-conform")) return 2;
    refuse_repeated_cases(c.cases);
    if (!c.suite.empty()) {
        // Temporary files of generators killed half-way are never cases (not *.h5); remove them.
        const auto stale = golden::remove_stale_temp_files(c.suite);
        if (!stale.empty())
            std::cerr << "moe-conform: removed " << stale.size() << " temporary file(s) of killed writers from "
                      << c.suite << "\n";
    }
    if (!c.no_manifest && !manifest_agrees(c.suite, c.cases, "moe-conform")) return 2;
    // Backends are made where the cases run (each worker process), never here before a fork;
    // names and plugins are checked here all the same.
    // "--backend cpu,,loop_f32" is refused when the flag is read (moe::cli::list_check); a name
    // given twice in so many words here, a mutant under its two spellings by the registry.
    std::vector<BackendMaker> makers =
        backends::make_backend_makers(cli::list_items("--backend", c.backends), c.backend_libs,
                                      backends::BuiltinOptions{c.device}, backends::UnnamedPlugins::refused);
    check_device_exists(c.device);
    std::string names_run;
    for (const auto& m : makers) names_run += (names_run.empty() ? "" : ",") + m.name;
    refuse_unused_device(c.device, std::any_of(makers.begin(), makers.end(), [](const BackendMaker& m) {
                             return backends::opencl_family(m.name);
                         }),
                         "--backend " + names_run);
    // The opencl backend and its mutants read the variables.
    for (const auto& m : makers)
        if (backends::opencl_family(m.name)) check_opencl_environment();
    const Selection selection = selected_files(c.suite.empty() ? c.cases : golden::suite_files(c.suite), c, c.shard);
    std::vector<std::string> names;
    for (const auto& m : makers) names.push_back(m.name);
    conformance::RunInfo info = make_run_info(c.command_line, names, c.suite.empty() ? "(files)" : c.suite, c);
    if (selection.empty_shard()) return report_empty_shard(info, {c.json, c.junit, c.html});
    conformance::RunOptions o = run_options(c, selection.files);
    // Each backend's repro line carries only what it needs: its own plugin, the device if opencl
    // (the line runs that one backend, and run refuses a plugin or a --device it would not use).
    for (const auto& m : makers) {
        std::string& flags = o.repro_flags[m.name];
        if (!m.library.empty()) flags += " --backend-lib " + conformance::shell_word(m.library);
        if (!c.device.empty() && backends::opencl_family(m.name)) flags += " --device " + conformance::shell_word(c.device);
    }
    // Each backend's outputs also go to result files, one folder per backend when several run.
    const auto results_dir = [&](const BackendMaker& m) {
        return makers.size() == 1 ? c.write_results : c.write_results + "/" + m.name;
    };
    RunPaths paths{o.files, {{"--json", c.json}, {"--junit", c.junit}, {"--html", c.html}}, {}};
    // The plugins too: `--json mine.so` replaced the plugin with the report, exit 0.
    paths.inputs.insert(paths.inputs.end(), c.backend_libs.begin(), c.backend_libs.end());
    if (!c.expect.empty()) paths.inputs.push_back(c.expect);
    if (!c.suite.empty()) paths.inputs.push_back((std::filesystem::path(c.suite) / golden::kManifestName).string());
    if (!c.write_results.empty())
        for (const auto& m : makers) paths.result_folders.push_back(results_dir(m));
    check_outputs_spare_inputs(paths);
    if (!c.write_results.empty()) {
        // Each file's case name and hash, read here before the workers: what HDF5 reads of it in
        // a child first, as check reads (child_process.hpp). Not the hash: plain bytes, which
        // cannot crash the library, and hashing a model-sized file twice cost seconds.
        const auto identify = [](const std::string& file) { golden::read_case_name(file); };
        if (const auto crashed = files_that_crash(o.files, identify, "golden file"); !crashed.empty()) {
            for (const auto& p : crashed) std::cerr << "moe-conform: error: " << p << "\n";
            return 2;
        }
        std::vector<golden::CaseIdentity> ids;
        for (const auto& f : o.files) ids.push_back(golden::identify_case(f));
        for (auto& m : makers) {
            const std::string dir = results_dir(m);
            conformance::create_output_folder(dir);  // here, so that a folder that can't be made is exit 2 at once
            m.make = [make = m.make, dir, ids] { return conformance::record_results(make(), dir, ids); };
        }
    }
    const auto start = std::chrono::steady_clock::now();
    const conformance::RunOutcome outcome = conformance::run_suite_from_makers(o, makers);
    info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Before the report, whose count line stays the last line a log parser reads.
    note_unused_expectations(c, o, outcome, c.shard);
    return report_outcome(info, outcome, {c.json, c.junit, c.html});
}

}  // namespace moe::conform_cli
