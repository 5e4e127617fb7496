#include "python_shrink.hpp"

#include <pybind11/stl.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "moe/shrink/shrink.hpp"
#include "moe/shrink/shrink_file.hpp"
#include "moe/spec/error.hpp"
#include "python_backend.hpp"
#include "repro_text.hpp"

namespace py = pybind11;

namespace moe::python {

namespace {

// What moe_conform.shrink returns: the file written and what moe-conform shrink prints.
struct ShrinkOutcome {
    std::string file;            // the shrunk golden case
    std::string before, after;   // the problem's sizes
    std::string status, stage, reason;  // the verdict on the shrunk case
    std::size_t runs = 0;
    std::vector<std::string> edits;
    bool stable = true;          // two more runs failed the same way
    // moe-conform shrink's exit code for this outcome: 0, or shrink::kExitNotDeterministic when
    // not stable (the file is written, but its repro may pass), so that a script can hand it on.
    int exit_code = 0;
    std::string stopped_early;   // what cut the search short, or ""
    std::string summary;         // the lines moe-conform shrink prints
    std::string repro;           // Python that reruns the shrunk case
};

ShrinkOutcome shrink_function(const py::function& fn, const std::string& case_file, const std::optional<std::string>& out,
                              const std::string& compute, const std::optional<std::string>& storage,
                              const std::optional<std::string>& dequant, const std::string& name, double max_seconds,
                              bool quiet) {
    if (!(max_seconds > 0)) throw InputError("max_seconds must be a positive number of seconds");
    PythonBackend backend(fn, name, {compute, storage.value_or(""), dequant.value_or("")});
    const golden::GoldenCase original = shrink::read_failing_case(case_file, 1);  // a damaged file is refused
    const std::string file = out ? *out : shrink::default_output(original);
    std::error_code ec;
    if (file.empty() || std::filesystem::is_directory(file, ec)) throw InputError("out=" + literal(file) + ": give a file name");
    if (std::filesystem::equivalent(file, case_file, ec))
        throw InputError("out=" + literal(file) + " is the case being shrunk: give another file");
    shrink::Options o;
    o.max_seconds = max_seconds;
    // fn runs in this process: a crash on a later candidate (or a kill) leaves the smallest
    // failing case found until then in the output file.
    o.accepted = [&](const golden::GoldenCase& current) { shrink::write_partial(file, original, current, name); };
    if (!quiet)
        o.progress = [](const std::string& line) {
            py::module_::import("sys").attr("stderr").attr("write")("  " + line + "\n");
        };
    shrink::Result r;
    try {
        r = shrink::shrink_case(original, shrink::make_backend_oracle(backend, 1), o);
    } catch (const Stop& stop) {  // KeyboardInterrupt or SystemExit in fn: raised as Python raises it
        std::rethrow_exception(stop.error);
    }
    shrink::write_shrunk(file, original, r, name);
    ShrinkOutcome s;
    s.file = file;
    s.before = r.before.to_string();
    s.after = r.after.to_string();
    s.status = conformance::status_name(r.verdict.status);
    s.stage = r.verdict.stage;
    s.reason = r.verdict.reason;
    s.runs = r.runs;
    s.edits = r.edits;
    s.stable = r.stable;
    s.exit_code = r.stable ? 0 : shrink::kExitNotDeterministic;
    s.stopped_early = r.limit;
    s.summary = shrink::summary_lines(original, r, name) + "wrote " + file + "\n";
    s.repro = "moe_conform.run_suite(fn, " + literal(file) + precision_args(compute, storage, dequant) + ")";
    if (!quiet) py::module_::import("sys").attr("stdout").attr("write")(s.summary + "repro: " + s.repro + "\n");
    return s;
}

}  // namespace

void bind_shrink(py::module_& m) {
    py::class_<ShrinkOutcome>(m, "ShrinkResult", "A shrunk case: the file written and how the function fails it.")
        .def_readonly("file", &ShrinkOutcome::file)
        .def_readonly("before", &ShrinkOutcome::before)
        .def_readonly("after", &ShrinkOutcome::after)
        .def_readonly("status", &ShrinkOutcome::status)
        .def_readonly("stage", &ShrinkOutcome::stage)
        .def_readonly("reason", &ShrinkOutcome::reason)
        .def_readonly("runs", &ShrinkOutcome::runs)
        .def_readonly("edits", &ShrinkOutcome::edits)
        .def_readonly("stable", &ShrinkOutcome::stable)
        .def_readonly("exit_code", &ShrinkOutcome::exit_code)
        .def_readonly("stopped_early", &ShrinkOutcome::stopped_early)
        .def_readonly("summary", &ShrinkOutcome::summary)
        .def_readonly("repro", &ShrinkOutcome::repro)
        .def("__repr__", [](const ShrinkOutcome& s) {
            return "<moe_conform.ShrinkResult " + s.file + " " + s.status + (s.stable ? "" : ", not deterministic") + ">";
        });
    m.def("_shrink", &shrink_function, py::arg("fn"), py::arg("case_file"), py::arg("out"), py::arg("compute"),
          py::arg("storage"), py::arg("dequant"), py::arg("name"), py::arg("max_seconds"), py::arg("quiet"));
}

}  // namespace moe::python
