// check: result files written by any framework, judged against the golden cases they answer.
#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "child_process.hpp"
#include "commands.hpp"
#include "output_paths.hpp"
#include "moe/conformance/result_check.hpp"
#include "moe/conformance/runner.hpp"
#include "moe/conformance/shell_word.hpp"
#include "moe/golden/golden_file.hpp"
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

// prepare_check works from summaries of the files (conformance::summarize_*: each golden and
// result file read in full, every check of the readers, no data kept) made in a child process,
// where a damaged old-format file that crashes or hangs HDF5 (spec/golden-format.md, "Crashes
// and hangs") cannot take the tool down: such a file is named (exit 2, as any file that cannot be
// used), files_that_crash reading the files again, one child per file, to find it. The golden
// files are read in full there, not only their types and shapes, so that one whose data crashes
// HDF5 is named before anything is compared, not an ERROR of the run. What this process then
// reads with HDF5 is what the child read first: each golden file's case name (the hash reads
// plain bytes, once, here), and each result file again when its case is compared.
std::optional<std::string> summaries_in_child(const std::vector<std::string>& files,
                                              const std::function<std::string(const std::vector<std::string>&)>& summarize,
                                              const std::string& kind, std::vector<std::string>& problems) {
    if (files.empty()) return summarize(files);
    // As files_that_crash's limit: reading takes about a second per 100 MB; the limit only ends a hang.
    std::uintmax_t bytes = 0;
    for (const auto& f : files) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(f, ec);
        if (!ec) bytes += size;
    }
    const long limit_ms = 60000 + 100 * static_cast<long>(files.size()) + static_cast<long>(bytes / 100000);
    if (auto text = in_child_process([&] { return summarize(files); }, limit_ms)) return text;
    auto crashed = files_that_crash(files, [&summarize](const std::string& f) { summarize({f}); }, kind);
    if (crashed.empty())  // this time no child crashed nor hung: no summaries all the same
        crashed.push_back("reading the " + kind + "s in a child process crashed or ran past " +
                          std::to_string(limit_ms / 1000) + " s, though reading them again did not; check again");
    problems.insert(problems.end(), crashed.begin(), crashed.end());
    return std::nullopt;
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
    const auto golden_summaries = summaries_in_child(
        in.golden_files, [](const std::vector<std::string>& files) { return conformance::summarize_golden_files(files); },
        "golden file", prepared.problems);
    const auto result_summaries = summaries_in_child(
        in.result_files,
        [&in](const std::vector<std::string>& files) { return conformance::summarize_result_files(files, in); },
        "result file", prepared.problems);
    if (prepared.problems.empty()) prepared = conformance::prepare_check(in, *golden_summaries, *result_summaries);
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
