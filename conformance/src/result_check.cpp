#include "moe/conformance/result_check.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "moe/conformance/judge.hpp"
#include "moe/conformance/runner.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/golden/result_file.hpp"
#include "moe/golden/suite.hpp"
#include "moe/spec/error.hpp"

namespace moe::conformance {

namespace {

namespace fs = std::filesystem;

struct Replayed {
    std::string file;
    Output output;
    Precision precision;
};

// The implementation under test, replayed from its result files.
class ResultReplay : public Backend {
public:
    ResultReplay(std::string name, std::shared_ptr<const std::map<std::string, Replayed>> by_case)
        : name_(std::move(name)), by_case_(std::move(by_case)) {}
    std::string name() const override { return name_; }
    std::string description() const override { return "results read from files (moe-conform check)"; }
    Support supports(const Problem&) const override { return {}; }
    Precision precision(DType data_type) const override { return {data_type, data_type}; }
    Precision precision_for(const Problem& p) const override {
        const auto it = by_case_->find(p.name);
        return it == by_case_->end() ? precision(p.input(kHiddenStates).dtype()) : it->second.precision;
    }
    bool provides_stages() const override { return true; }
    Output run(const Problem& p, bool want_stages) override {
        const auto it = by_case_->find(p.name);
        // The user's to fix, not a fault of the results: say how (a suite's other cases are left
        // out with --filter or --expert-type, or the cases answered named with --case).
        if (it == by_case_->end())
            throw CaseUnanswered(
                "no result file answers this case (missing result): give --case FILE... or --filter/--expert-type "
                "to judge only the cases you answer");
        Output out = it->second.output;
        if (!want_stages) out.stages.clear();
        return out;
    }

private:
    std::string name_;
    std::shared_ptr<const std::map<std::string, Replayed>> by_case_;
};

// Shapes against the golden case: the output has hidden_states' shape, each stage the golden
// stage layout [T, K, features]. Names the case and stage as stored (the caller escapes).
std::optional<std::string> shape_fault(const golden::ResultFile& r, const golden::GoldenCase& c) {
    const Tensor& hidden = c.problem.input(kHiddenStates);
    if (r.output.shape() != hidden.shape())
        return "output shape " + shape_to_string(r.output.shape()) + " is not hidden_states' " +
               shape_to_string(hidden.shape()) + " (case " + c.problem.name + ")";
    const Dims d = validate(c.problem);
    for (const auto& [name, t] : r.stages) {
        const auto want = golden_stage_shape(c.problem, d, name);
        if (!want) return "stage '" + name + "' is not a stage of " + std::string(expert_type_name(c.problem.attributes.expert_type));
        if (t.shape() != *want)
            return "stage '" + name + "' has shape " + shape_to_string(t.shape()) + ", expected " + shape_to_string(*want);
    }
    return std::nullopt;
}

}  // namespace

std::vector<std::string> result_files_in(const std::string& dir) {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir)) {
        const auto ext = e.path().extension();
        if (e.is_regular_file() && (ext == ".h5" || ext == ".npy")) files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) {
        // run --write-results DIR with several backends writes DIR/<backend>/: name those folders.
        std::vector<std::string> folders;
        for (const auto& e : fs::directory_iterator(dir))
            if (e.is_directory()) folders.push_back(e.path().filename().string());
        std::sort(folders.begin(), folders.end());
        std::string hint;
        for (const auto& f : folders) hint += (hint.empty() ? "" : ", ") + golden::printable((fs::path(dir) / f).string());
        throw InputError("results folder " + golden::printable(dir) + " holds no .h5 or .npy result file" +
                         (hint.empty() ? std::string()
                                       : " (it holds folders: " + hint +
                                             "; run --write-results writes one per backend when several run: give one)"));
    }
    return files;
}

PreparedCheck prepare_check(const CheckInputs& in) {
    PreparedCheck out;
    // Case names, stage names and paths come from the files (and their names) and reach the
    // terminal: escaped, as FileError messages are (already escaped, those are added as they are).
    const auto problem = [&out](const std::string& text) { out.problems.push_back(golden::printable(text)); };
    std::map<std::string, golden::CaseIdentity> cases;
    for (const auto& file : in.golden_files) {
        try {
            const golden::CaseIdentity id = golden::identify_case(file);
            if (!cases.emplace(id.case_name, id).second)
                problem(file + ": case '" + id.case_name + "' is also " + cases.at(id.case_name).file);
        } catch (const golden::FileError& e) {
            out.problems.push_back(e.what());
        }
    }
    std::map<std::string, Replayed> by_case;
    std::string implementation;
    for (const auto& file : in.result_files) {
        golden::ResultFile r;
        try {
            if (fs::path(file).extension() == ".npy") {
                if (in.golden_files.size() != 1 || cases.size() != 1) {
                    problem(file + ": a .npy result holds the output alone: give exactly one --case");
                    continue;
                }
                r = golden::read_npy_result(file, in.max_memory);
                r.case_name = cases.begin()->first;
                r.golden_sha256 = cases.begin()->second.sha256;
            } else {
                r = golden::read_result(file, in.max_memory, !in.precision);
            }
        } catch (const golden::FileError& e) {
            out.problems.push_back(e.what());
            continue;
        }
        const auto c = cases.find(r.case_name);
        if (c == cases.end() && in.others_ignored) continue;
        if (c == cases.end()) {
            problem(file + ": answers case '" + r.case_name + "', which is not among the golden files of this run (an "
                           "extra result)");
            continue;
        }
        if (r.golden_sha256 != c->second.sha256) {
            problem(file + ": answers case '" + r.case_name + "' of another golden file (SHA-256 " +
                    r.golden_sha256.substr(0, 16) + "...; " + c->second.file + " has " +
                    c->second.sha256.substr(0, 16) + "...)");
            continue;
        }
        golden::GoldenCase golden_case;
        try {
            golden_case = golden::read_golden(c->second.file);
        } catch (const std::exception& e) {
            out.problems.push_back(e.what());
            continue;
        }
        const std::optional<Precision> precision =
            in.precision ? std::optional<Precision>(in.precision(golden_case.problem.input(kHiddenStates).dtype()))
                         : r.precision;
        if (!precision) {
            problem(file + ": declares no precision (root attributes compute_type, storage_type): give --precision "
                           "COMPUTE[/STORAGE]");
            continue;
        }
        if (by_case.count(r.case_name)) {
            problem(file + ": case '" + r.case_name + "' already has a result, " + by_case.at(r.case_name).file);
            continue;
        }
        if (auto fault = shape_fault(r, golden_case)) {
            problem(file + ": " + *fault);
            continue;
        }
        if (implementation.empty()) implementation = r.implementation;
        out.result_file.emplace(r.case_name, file);
        by_case.emplace(r.case_name, Replayed{file, Output{std::move(r.output), std::move(r.stages)}, *precision});
    }
    if (!out.problems.empty()) return out;
    std::string name = !in.name.empty() ? in.name : !implementation.empty() ? implementation : "results";
    auto data = std::make_shared<const std::map<std::string, Replayed>>(std::move(by_case));
    out.replay = {name, [name, data] { return std::make_unique<ResultReplay>(name, data); }, ""};
    return out;
}

}  // namespace moe::conformance
