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
// file can crash or hang HDF5 (spec/golden-format.md, "Crashes and hangs"): it runs in a child
// first. When the child does not come back, each file is read alone in a child of its own, and
// the ones that crash or hang are named: exit 2, as for any file that cannot be used.
std::vector<std::string> unreadable_files(const conformance::CheckInputs& in) {
    const auto prepare = [](const conformance::CheckInputs& inputs) {
        return [inputs] {
            try {
                conformance::prepare_check(inputs);
            } catch (const std::exception&) {  // said again by the call in this process
            }
            return std::string("read");
        };
    };
    // Reading a file takes milliseconds: the limits only end a hang.
    const long limit_ms = 60000 + 100 * static_cast<long>(in.golden_files.size() + in.result_files.size());
    if (in_child_process(prepare(in), limit_ms)) return {};
    std::vector<std::string> problems;
    const auto probe = [&](const std::string& file, bool golden) {
        conformance::CheckInputs one = in;
        one.golden_files = golden ? std::vector<std::string>{file} : std::vector<std::string>{};
        one.result_files = golden ? std::vector<std::string>{} : std::vector<std::string>{file};
        if (!in_child_process(prepare(one), 60000))
            problems.push_back((golden ? "golden file " : "result file ") + golden::printable(file) +
                               ": reading it crashed or hung the HDF5 library (a damaged file)");
    };
    for (const auto& f : in.golden_files) probe(f, true);
    for (const auto& f : in.result_files) probe(f, false);
    if (problems.empty())  // the files one by one are fine: the whole failed (memory, time)
        problems.push_back("reading the golden and result files together crashed or ran past " +
                           std::to_string(limit_ms / 1000) + " s");
    return problems;
}

}  // namespace

int check(const CheckCommand& c) {
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
    if (selection.empty_shard()) return 77;
    conformance::RunOptions o = run_options(c, selection.files);
    auto info = make_run_info(c.command_line, {prepared.replay.name}, c.suite.empty() ? "(files)" : c.suite, c.tier);
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
