// check: result files written by any framework, judged against the golden cases they answer.
#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>

#include "child_process.hpp"
#include "commands.hpp"
#include "output_paths.hpp"
#include "moe/conformance/result_check.hpp"
#include "moe/conformance/runner.hpp"
#include "moe/conformance/shell_word.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/golden/result_file.hpp"
#include "moe/golden/suite.hpp"
#include "moe/spec/error.hpp"

namespace moe::conform_cli {

namespace {

// "f32", "f32/bf16" or "f32/f32/bf16": compute type, then storage type and dequantisation type
// (each by default the compute type); "data" in any place is the case's data type, as in the
// Python door's compute=, storage=, dequant=.
std::function<Precision(DType)> parse_precision(const std::string& text) {
    const auto slash = text.find('/'), second = slash == std::string::npos ? slash : text.find('/', slash + 1);
    // nullopt: "data".
    auto floating = [&](const std::string& name) -> std::optional<DType> {
        if (name == "data") return std::nullopt;
        const auto t = parse_dtype(name);
        if (!t || !is_floating(*t))
            throw InputError("--precision " + text + ": '" + name + "' is not f64, f32, f16, bf16 or data");
        return *t;
    };
    const auto compute = floating(text.substr(0, slash));
    const auto storage = slash == std::string::npos ? compute : floating(text.substr(slash + 1, second - slash - 1));
    const bool has_dequant = second != std::string::npos;
    const auto dequant = has_dequant ? floating(text.substr(second + 1)) : std::nullopt;
    return [=](DType data) {
        Precision p;
        p.compute = compute.value_or(data);
        p.storage = storage.value_or(data);
        if (has_dequant) p.dequant = dequant.value_or(data);
        return p;
    };
}

std::vector<std::string> result_files(const std::vector<std::string>& given) {
    if (given.size() == 1 && std::filesystem::is_directory(given.front()))
        return conformance::result_files_in(given.front());
    for (const auto& f : given)
        if (std::filesystem::is_directory(f)) throw InputError("--results: give one folder, or files, not both (" + f + ")");
    return given;
}

// prepare_check reads every golden and result file in this process, where a damaged old-format
// file can crash or hang HDF5 (spec/golden-format.md, "Crashes and hangs"): a child reads them
// first as prepare_check does (each golden file's identity, then all of it; each result), and a
// file that crashes or hangs it is named (exit 2, as any file that cannot be used). Of the
// identity, what HDF5 reads: the hash reads plain bytes, and cost seconds per model-sized file.
std::vector<std::string> unreadable_files(const conformance::CheckInputs& in) {
    auto problems = files_that_crash(
        in.golden_files,
        [](const std::string& file) {
            golden::read_case_name(file);
            golden::read_golden(file);
        },
        "golden file");
    const auto results = files_that_crash(
        in.result_files,
        [&in](const std::string& file) {
            if (std::filesystem::path(file).extension() == ".npy") golden::read_npy_result(file, in.max_memory);
            else golden::read_result(file, in.max_memory, !in.precision);
        },
        "result file");
    problems.insert(problems.end(), results.begin(), results.end());
    return problems;
}

}  // namespace

int check(const CheckCommand& c) {
    if (!cases_exist(c.cases, "moe-conform")) return 2;
    refuse_repeated_cases(c.cases);
    if (!c.no_manifest && !manifest_agrees(c.suite, c.cases, "moe-conform")) return 2;
    conformance::CheckInputs in;
    in.golden_files = c.suite.empty() ? c.cases : golden::suite_files(c.suite);
    in.result_files = result_files(c.results);
    if (!c.precision.empty()) in.precision = parse_precision(c.precision);
    // --case picks cases out of what a results folder answers, as --filter picks them out of a
    // suite: the folder's other results are not extras.
    in.others_ignored = !c.cases.empty() && c.results.size() == 1 && std::filesystem::is_directory(c.results.front());
    RunPaths paths{in.golden_files, {{"--json", c.json}, {"--junit", c.junit}, {"--html", c.html}}, {}};
    paths.inputs.insert(paths.inputs.end(), in.result_files.begin(), in.result_files.end());
    check_outputs_spare_inputs(paths);
    in.name = c.name;
    in.max_memory = c.max_memory;
    conformance::PreparedCheck prepared;
    prepared.problems = unreadable_files(in);
    if (prepared.problems.empty()) prepared = conformance::prepare_check(in);
    if (!prepared.problems.empty()) {
        for (const auto& p : prepared.problems) std::cerr << "moe-conform: error: " << p << "\n";
        std::cerr << "moe-conform: " << prepared.problems.size()
                  << " problem(s) with the golden or result files; nothing was compared\n";
        return 2;
    }
    const Selection selection = selected_files(in.golden_files, c, c.shard);
    auto info = make_run_info(c.command_line, {prepared.replay.name}, c.suite.empty() ? "(files)" : c.suite, c.tier);
    if (selection.empty_shard()) return report_empty_shard(info, {c.json, c.junit, c.html});
    conformance::RunOptions o = run_options(c, selection.files);
    const auto start = std::chrono::steady_clock::now();
    conformance::RunOutcome outcome = conformance::run_suite_from_makers(o, {prepared.replay});
    // Results name their case as stored; reports show it escaped (golden::printable).
    std::map<std::string, std::string> result_of_shown_case;
    for (const auto& [name, file] : prepared.result_file) result_of_shown_case[golden::printable(name)] = file;
    // Results show their golden file escaped too; the repro line names the real path.
    std::map<std::string, std::string> golden_of_shown_file;
    for (const auto& f : selection.files) golden_of_shown_file[golden::printable(f)] = f;
    for (auto& r : outcome.results) {
        const auto it = result_of_shown_case.find(r.case_name);
        const auto golden_file = golden_of_shown_file.find(r.file);
        r.repro = "moe-conform check --case " +
                  conformance::shell_word(golden_file == golden_of_shown_file.end() ? r.file : golden_file->second) +
                  " --results " +
                  (it == result_of_shown_case.end() ? std::string("<no result file for this case>")
                                                    : conformance::shell_word(it->second)) +
                  (c.precision.empty() ? "" : " --precision " + conformance::shell_word(c.precision));
    }
    info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return report_outcome(info, outcome, {c.json, c.junit, c.html});
}

}  // namespace moe::conform_cli
