// moe_conform's Python module: load a golden case, judge an output against it, or run a Python
// function over a suite, with the same comparison, statuses and reports as `moe-conform run`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "moe/conformance/expectations.hpp"
#include "moe/conformance/judge.hpp"
#include "moe/conformance/reports.hpp"
#include "moe/conformance/runner.hpp"
#include "moe/golden/manifest.hpp"
#include "moe/golden/stored_results.hpp"
#include "moe/golden/suite.hpp"
#include "moe/spec/error.hpp"
#include "moe/spec/printable.hpp"
#include "numpy_tensor.hpp"
#include "python_backend.hpp"
#include "python_case.hpp"
#include "python_shrink.hpp"
#include "repro_text.hpp"

namespace py = pybind11;
using namespace moe;
using conformance::CaseResult;

namespace {

constexpr const char* kVersion = "moe_conform 0.1.0 (Python)";

conformance::RunInfo run_info(const std::string& backend, const std::string& suite, const std::string& command) {
    conformance::RunInfo info;
    info.tool_version = kVersion;
    info.command_line = command;
    info.backends = {backend};
    info.suite = suite;
    info.tier = "full";
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    info.started_utc = buf;
    return info;
}

std::string text_report(const conformance::RunInfo& info, const std::vector<CaseResult>& results) {
    std::ostringstream out;
    conformance::write_text_report(out, info, results);
    return out.str();
}

py::object element(const std::optional<conformance::ElementReport>& e) {
    if (!e) return py::none();
    py::dict d;
    d["token"] = e->token;
    d["feature"] = e->feature;
    d["reference"] = e->reference;
    d["got"] = e->got;
    d["bound"] = e->bound;
    return std::move(d);
}

py::object stage(const std::optional<conformance::StageDivergence>& s) {
    if (!s) return py::none();
    py::dict d;
    d["stage"] = s->stage;
    d["token"] = s->token;
    d["slot"] = s->slot;
    d["feature"] = s->feature;
    d["reference"] = s->reference;
    d["got"] = s->got;
    d["bound"] = s->bound;
    d["worst_ratio"] = s->worst_ratio;
    return std::move(d);
}

// As the JSON report writes them (spec/report-format.md, 4.4): clamp_limit for GEMM2 alone.
py::object params(const std::optional<conformance::CaseParams>& p) {
    if (!p) return py::none();
    py::dict d;
    d["expert_type"] = std::string(expert_type_name(p->expert_type));
    d["convention"] = std::string(convention_name(p->convention));
    d["swish_beta"] = p->resolved.swish_beta;
    if (p->expert_type == ExpertType::gemm2_bias_swiglu_clamp) d["clamp_limit"] = p->resolved.clamp_limit;
    d["gate_lane"] = p->resolved.gate_lane;
    d["weight_layout"] = std::string(weight_layout_name(p->resolved.weight_layout));
    d["routing_layout"] = std::string(routing_layout_name(p->resolved.routing_layout));
    return std::move(d);
}

struct Summary {
    conformance::RunSummary counts;
    std::vector<CaseResult> results;
    std::vector<std::string> input_errors;
    int exit_code = 0;
    std::string report_text;
};

python::PythonCase load_case(const std::string& path) {
    python::PythonCase c;
    c.file = path;
    c.data->golden = golden::read_golden(path);
    validate(c.problem());
    // As moe-conform run does before any case: a stored output or bound that the reference
    // recomputed from the inputs contradicts is refused (GoldenFileError), never judged against:
    // a doubled stored output would pass a doubled kernel and fail a correct one.
    golden::check_stored_results(path, c.data->golden);
    return c;
}

using python::literal;
using python::precision_args;

CaseResult check(const python::PythonCase& c, const py::object& output, const std::string& compute,
                 const std::optional<std::string>& storage, const py::object& stages, const std::string& name,
                 const std::optional<std::string>& dequant) {
    if (!c.golden().outputs.count("output"))
        throw InputError("case " + printable(c.problem().name) + " has no reference output (load it with load_case)");
    Output out = python::output_from_python(stages.is_none() ? output : py::make_tuple(output, stages),
                                            c.problem().attributes.expert_type);
    const python::PrecisionSpec spec{compute, storage.value_or(""), dequant.value_or("")};
    conformance::JudgeInput in;
    in.file = c.file;
    in.backend = name;
    in.precision = spec.for_data(c.problem().input(kHiddenStates).dtype());
    in.repro = "moe_conform.check(moe_conform.load_case(" + literal(c.file) + "), output" +
               precision_args(compute, storage, dequant) + ")";
    CaseResult r = conformance::judge_output(c.golden(), out, in);
    r.params = conformance::case_params(c.problem().attributes);  // as run_suite's results carry them
    return r;
}

// The run, or the KeyboardInterrupt / SystemExit that stopped it, raised as Python raises it:
// no summary, no reports, as a Python loop over the cases would behave.
conformance::RunOutcome run_until_stopped(const conformance::RunOptions& o, python::PythonBackend& backend) {
    try {
        return conformance::run_suite(o, {&backend});
    } catch (const python::Stop& stop) {
        std::rethrow_exception(stop.error);
    }
}

Summary run_suite(const py::function& fn, const std::string& suite_dir, const std::string& compute,
                  const std::optional<std::string>& storage, const std::optional<std::string>& dequant,
                  const std::vector<std::string>& filters,
                  const std::optional<std::string>& json, const std::optional<std::string>& junit,
                  const std::string& name, bool quiet, const std::optional<std::string>& expect,
                  const std::optional<std::string>& shard, bool manifest,
                  const std::optional<std::string>& expert_type, bool fail_on_mistrusted) {
    // A bad value is refused before anything runs (InputError, a ValueError).
    const std::optional<ExpertType> type =
        expert_type ? std::optional<ExpertType>(conformance::expert_type_option(*expert_type, "expert_type"))
                    : std::nullopt;
    const std::string type_name = type ? std::string(expert_type_name(*type)) : std::string();
    python::PythonBackend backend(fn, name, {compute, storage.value_or(""), dequant.value_or("")});
    const auto print_errors = [quiet](const std::vector<std::string>& errors) {
        if (quiet) return;
        for (const auto& e : errors)
            py::module_::import("sys").attr("stderr").attr("write")("moe_conform.run_suite: error: " + e + "\n");
    };
    // As moe-conform run --suite (same library check): golden files that differ from the suite's
    // MANIFEST.sha256 were changed or damaged after it was written; nothing is run, exit 2.
    // One golden file runs alone, as `moe-conform run --case` (the repro of moe_conform.shrink).
    std::error_code ec;
    const bool one_file = std::filesystem::is_regular_file(suite_dir, ec);
    if (manifest && !one_file && std::filesystem::exists(std::filesystem::path(suite_dir) / golden::kManifestName)) {
        Summary s;
        s.input_errors = golden::manifest_problems(suite_dir);
        if (!s.input_errors.empty()) {
            s.input_errors.push_back(std::string("the golden files do not match ") + golden::kManifestName +
                                     " (changed or damaged after it was written); nothing was run "
                                     "(manifest=False skips this check)");
            print_errors(s.input_errors);
            s.exit_code = 2;
            return s;
        }
    }
    // Every argument that changes a verdict, so that the printed lines rerun what was judged
    // (shard, expect and the report files are left out, as moe-conform's repro lines leave them).
    const std::string args = precision_args(compute, storage, dequant) + (manifest ? "" : ", manifest=False") +
                             (type ? ", expert_type=" + literal(type_name) : "");
    auto info = run_info(name, suite_dir, "moe_conform.run_suite(" + name + ", " + literal(suite_dir) + args + ")");
    // As moe-conform's --fail-on-mistrusted: exit_code 1 on a MISTRUSTED, and the reports say why.
    info.fail_on_mistrusted = fail_on_mistrusted;
    conformance::RunOptions o;
    o.files = one_file ? std::vector<std::string>{suite_dir} : golden::suite_files(suite_dir);
    // As moe-conform run: the cases filter and expert_type leave out are passed over before the
    // run, so that its "[3/12]" lines count the selected cases alone (not "[162/170]" of 88).
    if (!shard && (!filters.empty() || type)) o.files = golden::select_files(o.files, filters, "", nullptr, type_name);
    if (shard) {  // as moe-conform run --shard I/N: every N-th selected case from the I-th
        const auto [index, count] = golden::parse_shard(*shard);
        std::vector<std::string> names;  // each selected file's case name, for the check below
        const auto selected = golden::select_files(o.files, filters, "", &names, type_name);
        // As moe-conform: one case name in two files is refused in every shard (each shard would
        // meet one copy and pass), and a shard with none of the selected cases is exit_code 77.
        if (const auto twice = golden::repeated_case_name(selected, names)) {
            Summary refused;
            refused.input_errors.push_back(*twice);
            print_errors(refused.input_errors);
            refused.exit_code = 2;
            return refused;
        }
        o.files = golden::shard_files(selected, index, count);
        if (o.files.empty() && !selected.empty()) {
            Summary empty;
            if (!quiet)
                py::module_::import("sys").attr("stderr").attr("write")(
                    "moe_conform.run_suite: shard " + *shard + " holds none of the " + std::to_string(selected.size()) +
                    " selected case(s): nothing to compare here (exit_code 77)\n");
            // Its report files hold no result, as moe-conform's: one per shard, each there.
            if (json) conformance::write_json_report(*json, info, {});
            if (junit) conformance::write_junit_report(*junit, info, {});
            empty.exit_code = 77;
            return empty;
        }
    }
    if (expect) o.expectations = conformance::load_expectations(*expect);
    o.filters = filters;
    o.expert_type = type;
    // As moe-conform run: a line per case on stderr, and a "still running" notice every 30 s while
    // one step (reading and checking a file, fn on it) goes on: a model-sized case takes minutes.
    o.progress = !quiet;
    const auto start = std::chrono::steady_clock::now();
    conformance::RunOutcome outcome = run_until_stopped(o, backend);
    for (auto& r : outcome.results)
        r.repro = "moe_conform.run_suite(fn, " + literal(suite_dir) + ", filter=" + literal(r.case_name) + args + ")";
    info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    // As the command line says it: a selection that matches nothing, or a suite file that cannot
    // be read, is exit 2 with the reason in input_errors, and printed unless quiet.
    if (outcome.results.empty() && outcome.input_errors.empty())
        outcome.input_errors.push_back("no case in " + suite_dir + " matched the filters");
    Summary s;
    s.report_text = text_report(info, outcome.results);
    if (!quiet) py::module_::import("sys").attr("stdout").attr("write")(s.report_text);
    print_errors(outcome.input_errors);
    if (json) conformance::write_json_report(*json, info, outcome.results);
    if (junit) conformance::write_junit_report(*junit, info, outcome.results);
    s.counts = conformance::summarize(outcome.results);
    s.exit_code = conformance::run_exit_code(outcome, info.fail_on_mistrusted);
    s.results = std::move(outcome.results);
    s.input_errors = std::move(outcome.input_errors);
    return s;
}

}  // namespace

PYBIND11_MODULE(_moe_conform, m) {
    m.doc() = "moe-conform: judge a MoE implementation against the golden suite (spec/tolerance.md bounds)";
    py::register_exception<InputError>(m, "InputError", PyExc_ValueError);
    py::register_exception<golden::FileError>(m, "GoldenFileError", PyExc_ValueError);
    python::bind_case(m);
    python::bind_skip(m);

    py::class_<CaseResult>(m, "Result", "The verdict on one output, as moe-conform reports it.")
        .def_property_readonly("case", [](const CaseResult& r) { return r.case_name; })
        .def_readonly("file", &CaseResult::file)
        .def_readonly("backend", &CaseResult::backend)
        .def_property_readonly("status", [](const CaseResult& r) { return std::string(conformance::status_name(r.status)); })
        .def_readonly("reason", &CaseResult::reason)
        .def_readonly("data_type", &CaseResult::data_type)
        .def_readonly("compute_type", &CaseResult::compute_type)
        .def_readonly("storage_type", &CaseResult::storage_type)
        .def_property_readonly("dequant_type", [](const CaseResult& r) {
            return r.dequant_type.empty() ? py::object(py::none()) : py::object(py::str(r.dequant_type));
        })
        .def_readonly("exact", &CaseResult::exact)
        .def_readonly("repro", &CaseResult::repro)
        .def_property_readonly("worst_ratio", [](const CaseResult& r) { return r.metrics.worst_ratio; })
        .def_property_readonly("max_abs", [](const CaseResult& r) { return r.metrics.max_abs_error; })
        .def_property_readonly("max_rel", [](const CaseResult& r) { return r.metrics.max_rel_error; })
        .def_property_readonly("max_ulps", [](const CaseResult& r) { return r.metrics.max_ulps; })
        .def_property_readonly("over_bound", [](const CaseResult& r) { return r.metrics.over_bound; })
        .def_property_readonly("elements", [](const CaseResult& r) { return r.metrics.elements; })
        .def_property_readonly("worst_element", [](const CaseResult& r) { return element(r.metrics.worst); })
        .def_property_readonly("first_divergent_stage", [](const CaseResult& r) { return stage(r.first_divergent_stage); })
        .def_property_readonly("params", [](const CaseResult& r) { return params(r.params); },
                               "The op's parameters (expert_type, convention, swish_beta, clamp_limit for GEMM2, "
                               "gate_lane, weight_layout, routing_layout) as a dict; None when the file was not read.")
        .def_property_readonly("report_text", [](const CaseResult& r) {
            return text_report(run_info(r.backend, r.file, "moe_conform.check"), {r});
        })
        .def("__repr__", [](const CaseResult& r) {
            return "<moe_conform.Result " + r.case_name + " " + std::string(conformance::status_name(r.status)) + ">";
        });

    py::class_<Summary>(m, "Summary", "A suite run: counts, one Result per case, the exit code a CI would get.")
        .def_property_readonly("passed", [](const Summary& s) { return s.counts.passed; })
        .def_property_readonly("failed", [](const Summary& s) { return s.counts.failed; })
        .def_property_readonly("skipped", [](const Summary& s) { return s.counts.skipped; })
        .def_property_readonly("errors", [](const Summary& s) { return s.counts.errors; })
        .def_property_readonly("mistrusted", [](const Summary& s) { return s.counts.mistrusted; })
        .def_readonly("results", &Summary::results)
        .def_readonly("input_errors", &Summary::input_errors)
        .def_readonly("exit_code", &Summary::exit_code)
        .def_readonly("report_text", &Summary::report_text)
        .def_property_readonly("count_line", [](const Summary& s) { return conformance::count_line(s.counts); });

    m.def("load_case", &load_case, py::arg("path"), "Reads a golden file, checked as moe-conform run checks it: every input, and the stored output and bounds "
          "against the reference recomputed from the inputs (a file they disagree with is a GoldenFileError).");
    m.def("check", &check, py::arg("case"), py::arg("output"), py::arg("compute") = "f32",
          py::arg("storage") = py::none(), py::arg("stages") = py::none(), py::arg("name") = "python",
          py::arg("dequant") = py::none(),
          "Judges one output (numpy array, any byte order and strides; stages: {name: array} in the golden "
          "[T, K, features] layout, a name the case's expert type does not have is an InputError). compute, "
          "storage, dequant: the declared precision (spec/tolerance.md); storage and dequant None = compute.");
    m.def("_run_suite", &run_suite, py::arg("fn"), py::arg("suite_dir"), py::arg("compute"), py::arg("storage"),
          py::arg("dequant"), py::arg("filters"), py::arg("json"), py::arg("junit"), py::arg("name"), py::arg("quiet"),
          py::arg("expect"), py::arg("shard"), py::arg("manifest"), py::arg("expert_type"),
          py::arg("fail_on_mistrusted"));
    python::bind_shrink(m);
}
