// check: result files written by any framework, judged against the golden cases they answer.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "commands.hpp"
#include "output_paths.hpp"
#include "moe/conformance/result_check.hpp"
#include "moe/conformance/runner.hpp"
#include "moe/conformance/shell_word.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/golden/suite.hpp"
#include "moe/shrink/case_in_suite.hpp"
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
    const long limit_ms = read_limit_ms(files);  // as files_that_crash's
    if (auto text = in_child_process([&] { return summarize(files); }, limit_ms)) return text;
    auto crashed = files_that_crash(files, [&summarize](const std::string& f) { summarize({f}); }, kind);
    if (crashed.empty())  // this time no child crashed nor hung: no summaries all the same
        crashed.push_back("reading the " + kind + "s in a child process crashed or ran past " +
                          std::to_string(limit_ms / 1000) + " s, though reading them again did not; check again");
    problems.insert(problems.end(), crashed.begin(), crashed.end());
    return std::nullopt;
}

// The problems on stderr, the same problem of many files said three times and then counted: one
// writer's slip (bf16 bits without element_type, a missing precision) hit every file of a suite,
// and 170 near-identical lines hid any other problem. Two problems are the same when they are
// equal once the file names in them (`files`, as printed: escaped) are taken out; the others are
// printed in full, in order.
void print_problems(const std::vector<std::string>& problems, const std::vector<std::string>& files) {
    constexpr std::size_t kShown = 3;
    std::vector<std::string> names;
    for (const auto& f : files) names.push_back(golden::printable(f));
    // Longest first: a name inside a longer one is not taken out of it.
    std::sort(names.begin(), names.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
    const auto pattern = [&names](std::string text) {
        for (const auto& n : names)
            for (auto at = text.find(n); !n.empty() && at != std::string::npos; at = text.find(n, at + 1))
                text.replace(at, n.size(), std::string(1, '\0'));
        return text;
    };
    std::vector<std::string> patterns;
    std::map<std::string, std::size_t> count;  // pattern -> problems with it
    for (const auto& p : problems) ++count[patterns.emplace_back(pattern(p))];
    std::map<std::string, std::size_t> seen;
    for (std::size_t i = 0; i < problems.size(); ++i) {
        const std::size_t k = ++seen[patterns[i]];
        if (k <= kShown) std::cerr << "moe-conform: error: " << problems[i] << "\n";
        else if (k == kShown + 1)
            std::cerr << "moe-conform: error: ... and " << count[patterns[i]] - kShown
                      << " more files with the same problem\n";
    }
}

// A FAIL whose output was stored in a type narrower than the case's data type and than the
// declared storage type (f16 or bf16 bits of an f32 case declared f32/f32): the rounding to the
// narrow type alone can exceed a bound derived from the declared storage, and the table said only
// "FAIL". Not when the declared storage is that narrow: the bound then allows for it.
void note_narrow_output(conformance::CaseResult& r, DType stored) {
    const auto data = parse_dtype(r.data_type), storage = parse_dtype(r.storage_type);
    if (!data || !storage) return;
    if (dtype_size(stored) >= dtype_size(*data) || dtype_size(stored) >= dtype_size(*storage)) return;
    const std::string s(dtype_name(stored)), d(r.data_type);
    r.reason += (r.reason.empty() ? "" : "; ") + std::string("NOTE: the output is stored as ") + s +
                " while the case's data type is " + d + ": a kernel's output is compared in the case's type; store it in " +
                d + ", or declare storage_type " + s + " (--precision " + r.compute_type + "/" + s +
                ") if the kernel's output really is " + s;
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
    if (!c.expect.empty()) paths.inputs.push_back(c.expect);
    check_outputs_spare_inputs(paths);
    in.name = c.name;
    in.closest_case = shrink::closest_name;  // an extra result's "did you mean", as --case's
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
        std::vector<std::string> files = in.golden_files;
        files.insert(files.end(), in.result_files.begin(), in.result_files.end());
        print_problems(prepared.problems, files);
        std::cerr << "moe-conform: " << prepared.problems.size()
                  << " problem(s) with the golden or result files; nothing was compared\n";
        return 2;
    }
    const Selection selection = selected_files(in.golden_files, c, c.shard);
    auto info = make_run_info(c.command_line, {prepared.replay.name}, c.suite.empty() ? "(files)" : c.suite, c);
    if (selection.empty_shard()) return report_empty_shard(info, {c.json, c.junit, c.html});
    conformance::RunOptions o = run_options(c, selection.files);
    const auto start = std::chrono::steady_clock::now();
    conformance::RunOutcome outcome = conformance::run_suite_from_makers(o, {prepared.replay});
    // Results name their case as stored; reports show it escaped (golden::printable).
    std::map<std::string, const conformance::PreparedCheck::Answer*> answer_of_shown_case;
    for (const auto& [name, answer] : prepared.answers) answer_of_shown_case[golden::printable(name)] = &answer;
    // Results show their golden file escaped too; the repro line names the real path.
    std::map<std::string, std::string> golden_of_shown_file;
    for (const auto& f : selection.files) golden_of_shown_file[golden::printable(f)] = f;
    std::string given_results;
    for (const auto& f : c.results) given_results += (given_results.empty() ? "" : " ") + conformance::shell_word(f);
    for (auto& r : outcome.results) {
        const auto it = answer_of_shown_case.find(r.case_name);
        if (r.status == conformance::Status::fail && it != answer_of_shown_case.end())
            note_narrow_output(r, it->second->output_type);
        const auto golden_file = golden_of_shown_file.find(r.file);
        r.repro = c.tool + " check --case " +
                  conformance::shell_word(golden_file == golden_of_shown_file.end() ? r.file : golden_file->second) +
                  " --results " +
                  // No result answers the case: the results given, which rerun to the same ERROR.
                  (it == answer_of_shown_case.end() ? given_results
                                                    : conformance::shell_word(it->second->file)) +
                  (c.precision.empty() ? "" : " --precision " + conformance::shell_word(c.precision)) +
                  // An XFAIL or XPASS is one only against the expectation file, as in run's lines.
                  (c.expect.empty() ? "" : " --expect " + conformance::shell_word(c.expect)) +
                  // A MISTRUSTED result fails only under the flag: the rerun exits as this run did.
                  (c.fail_on_mistrusted ? " --fail-on-mistrusted" : "");
    }
    info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Before the report, whose count line stays the last line a log parser reads.
    note_unused_expectations(c, o, outcome, c.shard);
    return report_outcome(info, outcome, {c.json, c.junit, c.html});
}

}  // namespace moe::conform_cli
