#include "moe/conformance/result_check.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "moe/conformance/judge.hpp"
#include "moe/conformance/runner.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/golden/result_file.hpp"
#include "moe/golden/suite.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/spec/error.hpp"

namespace moe::conformance {

namespace {

namespace fs = std::filesystem;

using json = nlohmann::json;

json shape_json(const Shape& s) { return json(s); }
Shape shape_from(const json& j) { return j.get<Shape>(); }
json shapes_json(const std::map<std::string, Shape>& m) {
    json j = json::object();
    for (const auto& [name, s] : m) j[name] = shape_json(s);
    return j;
}
std::map<std::string, Shape> shapes_from(const json& j) {
    std::map<std::string, Shape> m;
    for (const auto& [name, s] : j.items()) m[name] = shape_from(s);
    return m;
}

// CBOR, not JSON text: case and stage names are bytes from the files, not always UTF-8.
std::string summaries_text(const json& list) {
    const std::vector<std::uint8_t> bytes = json::to_cbor(list);
    return std::string(bytes.begin(), bytes.end());
}
json summaries_from(const std::string& text, std::size_t files) {
    json list = json::from_cbor(text);
    if (!list.is_array() || list.size() != files) throw std::runtime_error("file summaries: not one per file");
    return list;
}

// What prepare_check needs of a golden file, read (and checked) in full as the run reads it.
json golden_summary(const std::string& file) {
    json j = json::object();
    try {
        golden::read_case_name(file);  // HDF5's part of the identity prepare_check reads
        const golden::GoldenCase c = golden::read_golden(file);
        const Tensor& hidden = c.problem.input(kHiddenStates);
        j["data"] = std::string(dtype_name(hidden.dtype()));
        j["hidden"] = shape_json(hidden.shape());
        j["expert_type"] = std::string(expert_type_name(c.problem.attributes.expert_type));
        try {
            const Dims d = validate(c.problem);
            j["dims"] = {d.T, d.K, d.H, d.I};  // what golden_stage_shape needs of them
        } catch (const InputError& e) {
            j["invalid"] = e.what();  // thrown where prepare_check validated the case, as before
        }
    } catch (const std::exception& e) {
        j["error"] = e.what();
    }
    return j;
}

// What prepare_check needs of a result file, read (and checked) in full: all but the data.
json result_summary(const std::string& file, const CheckInputs& in) {
    json j = json::object();
    golden::ResultFile r;
    try {
        r = fs::path(file).extension() == ".npy" ? golden::read_npy_result(file, in.max_memory)
                                                 : golden::read_result(file, in.max_memory, !in.precision);
    } catch (const golden::FileError& e) {
        j["error"] = e.what();
        return j;
    } catch (const std::exception& e) {
        j["fatal"] = e.what();  // not a fault of the file: prepare_check lets it out, as before
        return j;
    }
    j["case"] = r.case_name;
    j["golden_sha256"] = r.golden_sha256;
    j["implementation"] = r.implementation;
    if (r.precision) {
        j["compute"] = std::string(dtype_name(r.precision->compute));
        j["storage"] = std::string(dtype_name(r.precision->storage));
        if (r.precision->dequant) j["dequant"] = std::string(dtype_name(*r.precision->dequant));
    }
    j["output"] = shape_json(r.output.shape());
    j["output_type"] = std::string(dtype_name(r.output.dtype()));
    std::map<std::string, Shape> stages;
    for (const auto& [name, t] : r.stages) stages[name] = t.shape();
    j["stages"] = shapes_json(stages);
    return j;
}

DType dtype_from(const json& j) { return *parse_dtype(j.get<std::string>()); }

// One result file as prepare_check accepted it: read again, whole, when its case is compared.
struct Replayed {
    std::string file;
    Precision precision;
    bool npy = false;
    std::string case_name, golden_sha256;  // as the file says (.npy: none)
    Shape output;
    std::map<std::string, Shape> stages;
};

// A result file passed over because it answers no case of the run (CheckInputs::others_ignored).
struct PassedOver {
    std::string file, case_name;  // as stored
};

struct ReplaySource {
    std::map<std::string, Replayed> by_case;
    std::uint64_t max_memory = 0;
    bool read_precision = true;
    // For a missing result's message: what the results given answer instead, and the typo finder.
    std::vector<PassedOver> passed_over;
    std::function<std::optional<std::string>(const std::string&, const std::vector<std::string>&)> closest_case;
};

// The passed-over result most likely meant for `wanted`: one named for it (run --write-results
// names each <case>.h5) whose `case` attribute says otherwise, else the closest `case` attribute.
std::optional<PassedOver> meant_result(const std::string& wanted, const ReplaySource& s) {
    for (const auto& p : s.passed_over)
        if (fs::path(p.file).stem() == wanted) return p;
    if (!s.closest_case) return std::nullopt;
    std::vector<std::string> names;
    for (const auto& p : s.passed_over) names.push_back(p.case_name + ".h5");  // as closest_name compares file names
    const auto near = s.closest_case(wanted + ".h5", names);
    if (!near) return std::nullopt;
    for (const auto& p : s.passed_over)
        if (p.case_name + ".h5" == *near) return p;
    return std::nullopt;
}

// "F1 (case 'X1'), F2 (case 'X2'), F3 (case 'X3') and 5 more": what the results given answer.
std::string passed_over_list(const std::vector<PassedOver>& passed_over) {
    constexpr std::size_t kShown = 3;
    std::string list;
    for (std::size_t i = 0; i < passed_over.size() && i < kShown; ++i)
        list += (i ? ", " : "") + golden::printable(passed_over[i].file) + " (case '" +
                golden::printable(passed_over[i].case_name) + "')";
    if (passed_over.size() > kShown) list += " and " + std::to_string(passed_over.size() - kShown) + " more";
    return list;
}

// Why no result answers `wanted`. Where `check --case FILE --results FOLDER` passed over the
// folder's results for other cases, they are named, with the one most likely meant: a typo in a
// `case` attribute read as a missing result alone, the file that held the answer never named.
std::string unanswered_message(const std::string& wanted, const ReplaySource& s) {
    const std::string missing = "no result file answers this case (missing result)";
    if (s.passed_over.empty())
        return missing + ": give --case FILE... or --filter/--expert-type to judge only the cases you answer";
    const std::string others = "the results given answer " + std::to_string(s.passed_over.size()) + " other case" +
                               (s.passed_over.size() == 1 ? "" : "s") + ": " + passed_over_list(s.passed_over);
    const auto meant = meant_result(wanted, s);
    if (!meant)
        return missing + "; " + others + " (a result answers the case its `case` attribute names: '" +
               golden::printable(wanted) + "' here)";
    return missing + "; did you mean " + golden::printable(meant->file) + "? Its `case` attribute is '" +
           golden::printable(meant->case_name) + "', not this case's name '" + golden::printable(wanted) + "' (" +
           others + ")";
}

// The file's output and stages, refused when they are not what prepare_check accepted (the file
// was replaced since: its verdict would be of a result nobody checked).
Output read_answer(const Replayed& a, const ReplaySource& s) {
    golden::ResultFile r = a.npy ? golden::read_npy_result(a.file, s.max_memory)
                                 : golden::read_result(a.file, s.max_memory, s.read_precision);
    std::map<std::string, Shape> stages;
    for (const auto& [name, t] : r.stages) stages[name] = t.shape();
    if ((!a.npy && (r.case_name != a.case_name || r.golden_sha256 != a.golden_sha256)) || r.output.shape() != a.output ||
        stages != a.stages)
        throw std::runtime_error("result file " + golden::printable(a.file) +
                                 " changed after it was checked (another case, golden hash or shape): check again");
    return Output{std::move(r.output), std::move(r.stages)};
}

// The implementation under test, replayed from its result files: each read when its case runs
// (prepare(), before the timed run()), so that one result at a time is in memory.
class ResultReplay : public Backend {
public:
    ResultReplay(std::string name, std::shared_ptr<const ReplaySource> source)
        : name_(std::move(name)), source_(std::move(source)) {}
    std::string name() const override { return name_; }
    std::string description() const override { return "results read from files (moe-conform check)"; }
    Support supports(const Problem&) const override { return {}; }
    Precision precision(DType data_type) const override { return {data_type, data_type}; }
    Precision precision_for(const Problem& p) const override {
        const auto it = source_->by_case.find(p.name);
        return it == source_->by_case.end() ? precision(p.input(kHiddenStates).dtype()) : it->second.precision;
    }
    bool provides_stages() const override { return true; }
    void prepare(const Problem& p) override {
        pending_.reset();
        const auto it = source_->by_case.find(p.name);
        if (it != source_->by_case.end()) pending_.emplace(p.name, read_answer(it->second, *source_));
    }
    Output run(const Problem& p, bool want_stages) override {
        const auto it = source_->by_case.find(p.name);
        // The user's to fix, not a fault of the results: say how (a suite's other cases are left
        // out with --filter or --expert-type, or the cases answered named with --case).
        if (it == source_->by_case.end()) throw CaseUnanswered(unanswered_message(p.name, *source_));
        Output out = pending_ && pending_->first == p.name ? std::move(pending_->second) : read_answer(it->second, *source_);
        pending_.reset();
        if (!want_stages) out.stages.clear();
        return out;
    }

private:
    std::string name_;
    std::shared_ptr<const ReplaySource> source_;
    std::optional<std::pair<std::string, Output>> pending_;  // prepare()'s read, for run()
};

// Shapes against the golden case: the output has hidden_states' shape, each stage the golden
// stage layout [T, K, features]. Names the case and stage as stored (the caller escapes).
std::optional<std::string> shape_fault(const json& r, const json& golden, const std::string& case_name) {
    const Shape output = shape_from(r.at("output")), hidden = shape_from(golden.at("hidden"));
    if (output != hidden)
        return "output shape " + shape_to_string(output) + " is not hidden_states' " + shape_to_string(hidden) +
               " (case " + case_name + ")";
    if (golden.contains("invalid")) throw InputError(golden.at("invalid").get<std::string>());
    // golden_stage_shape needs the expert type and the sizes alone.
    Problem p;
    p.attributes.expert_type = parse_expert_type(golden.at("expert_type").get<std::string>());
    Dims d;
    const json& dims = golden.at("dims");
    d.T = dims.at(0);
    d.K = dims.at(1);
    d.H = dims.at(2);
    d.I = dims.at(3);
    for (const auto& [name, shape] : shapes_from(r.at("stages"))) {
        const auto want = golden_stage_shape(p, d, name);
        if (!want) {
            // The names the type has, so that "activation" is seen to be "act" without the spec.
            std::string names;
            for (const auto& n : reference::stage_names(p.attributes.expert_type)) names += (names.empty() ? "" : ", ") + n;
            return "stage '" + name + "' is not a stage of " + std::string(expert_type_name(p.attributes.expert_type)) +
                   " (its stages: " + names + ")";
        }
        if (shape != *want)
            return "stage '" + name + "' has shape " + shape_to_string(shape) + ", expected " + shape_to_string(*want);
    }
    return std::nullopt;
}

// The golden case an extra result's `case` most likely meant: the golden file's name given for
// its case name ("gemm3_qwen_openvino_f32.h5", or a path to it) is a common slip, then a typo.
std::optional<std::string> meant_case(const std::string& given, const std::map<std::string, golden::CaseIdentity>& cases,
                                      const CheckInputs& in) {
    std::string stem = fs::path(given).filename().string();
    if (stem.size() > 3 && stem.compare(stem.size() - 3, 3, ".h5") == 0) stem.resize(stem.size() - 3);
    if (cases.count(stem)) return stem;
    if (!in.closest_case) return std::nullopt;
    std::vector<std::string> names;
    for (const auto& entry : cases) names.push_back(entry.first + ".h5");  // as closest_name compares file names
    auto near = in.closest_case(given, names);
    if (near) near->resize(near->size() - 3);
    return near;
}

}  // namespace

std::vector<std::string> result_files_in(const std::string& dir) {
    // Subfolders too: a CI job that downloads each shard's artifact gets DIR/<shard>/*.h5, and a
    // bare "no result file answers this case" for every case of a subfolder told it nothing. Each
    // case still takes one result: the same case answered in two subfolders is refused, named
    // (prepare_check), as two answers in one folder are. Links to folders are not followed (a
    // loop would never end).
    std::vector<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        const auto ext = e.path().extension();
        if (e.is_regular_file() && (ext == ".h5" || ext == ".npy")) files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    if (files.empty())
        throw InputError("results folder " + golden::printable(dir) +
                         " holds no .h5 or .npy result file, nor do its subfolders");
    return files;
}

std::string summarize_golden_files(const std::vector<std::string>& files) {
    json list = json::array();
    for (const auto& f : files) list.push_back(golden_summary(f));
    return summaries_text(list);
}

std::string summarize_result_files(const std::vector<std::string>& files, const CheckInputs& in) {
    json list = json::array();
    for (const auto& f : files) list.push_back(result_summary(f, in));
    return summaries_text(list);
}

PreparedCheck prepare_check(const CheckInputs& in) {
    return prepare_check(in, summarize_golden_files(in.golden_files), summarize_result_files(in.result_files, in));
}

PreparedCheck prepare_check(const CheckInputs& in, const std::string& golden_summaries,
                            const std::string& result_summaries) {
    const json goldens = summaries_from(golden_summaries, in.golden_files.size());
    const json results = summaries_from(result_summaries, in.result_files.size());
    PreparedCheck out;
    // Case names, stage names and paths come from the files (and their names) and reach the
    // terminal: escaped, as FileError messages are (already escaped, those are added as they are).
    const auto problem = [&out](const std::string& text) { out.problems.push_back(golden::printable(text)); };
    std::map<std::string, golden::CaseIdentity> cases;
    std::map<std::string, std::size_t> golden_index;  // file -> its summary
    for (std::size_t i = 0; i < in.golden_files.size(); ++i) {
        const std::string& file = in.golden_files[i];
        golden_index.emplace(file, i);
        try {
            const golden::CaseIdentity id = golden::identify_case(file);
            if (!cases.emplace(id.case_name, id).second)
                problem(file + ": case '" + id.case_name + "' is also " + cases.at(id.case_name).file);
        } catch (const golden::FileError& e) {
            out.problems.push_back(e.what());
        }
    }
    auto source = std::make_shared<ReplaySource>();
    source->max_memory = in.max_memory;
    source->read_precision = !in.precision;
    source->closest_case = in.closest_case;
    std::string implementation;
    for (std::size_t i = 0; i < in.result_files.size(); ++i) {
        const std::string& file = in.result_files[i];
        const json& r = results[i];
        const bool npy = fs::path(file).extension() == ".npy";
        if (npy && (in.golden_files.size() != 1 || cases.size() != 1)) {
            problem(file + ": a .npy result holds the output alone: give exactly one --case");
            continue;
        }
        if (r.contains("fatal")) throw std::runtime_error(r.at("fatal").get<std::string>());
        if (r.contains("error")) {
            out.problems.push_back(r.at("error").get<std::string>());
            continue;
        }
        const std::string case_name = npy ? cases.begin()->first : r.at("case").get<std::string>();
        const std::string sha = npy ? cases.begin()->second.sha256 : r.at("golden_sha256").get<std::string>();
        const auto c = cases.find(case_name);
        if (c == cases.end() && in.others_ignored) {
            source->passed_over.push_back({file, case_name});
            continue;
        }
        if (c == cases.end()) {
            const auto near = meant_case(case_name, cases, in);
            problem(file + ": answers case '" + case_name + "', which is not among the golden files of this run (an "
                           "extra result)" +
                    (near ? "; did you mean '" + *near + "'? (the `case` attribute is the golden file's case name)"
                          : std::string()));
            continue;
        }
        if (sha != c->second.sha256) {
            problem(file + ": answers case '" + case_name + "' of another golden file (SHA-256 " + sha.substr(0, 16) +
                    "...; " + c->second.file + " has " + c->second.sha256.substr(0, 16) + "...)");
            continue;
        }
        // The golden file read in full where the summaries were made: its error, as read_golden's.
        const json& golden_case = goldens[golden_index.at(c->second.file)];
        if (golden_case.contains("error")) {
            out.problems.push_back(golden_case.at("error").get<std::string>());
            continue;
        }
        std::optional<Precision> precision;
        if (in.precision) precision = in.precision(dtype_from(golden_case.at("data")));
        else if (r.contains("compute"))
            precision = Precision(dtype_from(r.at("compute")), dtype_from(r.at("storage")),
                                  r.contains("dequant") ? std::optional<DType>(dtype_from(r.at("dequant"))) : std::nullopt);
        if (!precision) {
            // A .npy holds the array alone: it has no attributes to add, only the flag to give.
            problem(npy ? file + ": declares no precision (a .npy result holds the array alone): give --precision "
                                 "COMPUTE[/STORAGE] (e.g. --precision f32 for a float32 computation)"
                        : file + ": declares no precision (root attributes compute_type, storage_type): give "
                                 "--precision COMPUTE[/STORAGE]");
            continue;
        }
        if (source->by_case.count(case_name)) {
            const std::string& first = source->by_case.at(case_name).file;
            // Results folders are searched with their subfolders: two answers from two of them
            // are most often the folders of two implementations (run --write-results writes one
            // per backend when several run), not two shards.
            const bool other_folder = fs::path(file).parent_path() != fs::path(first).parent_path();
            problem(file + ": case '" + case_name + "' already has a result, " + first +
                    (other_folder ? " (subfolders of a results folder are searched too: give --results the folder "
                                    "of one implementation)"
                                  : ""));
            continue;
        }
        if (auto fault = shape_fault(r, golden_case, case_name)) {
            problem(file + ": " + *fault);
            continue;
        }
        if (implementation.empty()) implementation = r.at("implementation").get<std::string>();
        out.answers.emplace(case_name, PreparedCheck::Answer{file, dtype_from(r.at("output_type"))});
        source->by_case.emplace(case_name, Replayed{file, *precision, npy, npy ? "" : case_name, npy ? "" : sha,
                                                    shape_from(r.at("output")), shapes_from(r.at("stages"))});
    }
    if (!out.problems.empty()) return out;
    std::string name = !in.name.empty() ? in.name : !implementation.empty() ? implementation : "results";
    std::shared_ptr<const ReplaySource> data = std::move(source);
    out.replay = {name, [name, data] { return std::make_unique<ResultReplay>(name, data); }, ""};
    return out;
}

}  // namespace moe::conformance
