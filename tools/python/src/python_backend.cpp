#include "python_backend.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "moe/conformance/runner.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/spec/error.hpp"
#include "numpy_tensor.hpp"
#include "python_case.hpp"

namespace py = pybind11;

namespace moe::python {

namespace {

// moe_conform.Skip (bind_skip): kept for the life of the process, as the module that made it is.
PyObject* skip_type = nullptr;

DType type_named(const std::string& name, DType data, const char* what) {
    if (name == "data") return data;
    const auto t = parse_dtype(name);
    if (!t || !is_floating(*t))
        throw InputError(std::string(what) + " '" + name + "': expected f64, f32, f16, bf16 or \"data\"");
    return *t;
}

// A stage name the expert type does not have would never be compared: refused, with the ones it has.
void check_stage_name(const std::string& stage, ExpertType type) {
    const auto names = reference::stage_names(type);
    if (std::find(names.begin(), names.end(), stage) != names.end()) return;
    std::string allowed;
    for (const auto& n : names) allowed += (allowed.empty() ? "" : ", ") + n;
    throw InputError("stage '" + stage + "' is not a stage of " + std::string(expert_type_name(type)) +
                     " (its stages: " + allowed + ")");
}

}  // namespace

void bind_skip(py::module_& m) {
    skip_type = PyErr_NewExceptionWithDoc(
        "moe_conform.Skip",
        "Raised by the function run_suite calls, for a case it does not handle: that case is SKIP with the "
        "exception's message as its reason (not an ERROR), as a backend's unsupported case is.",
        PyExc_Exception, nullptr);
    if (!skip_type) throw py::error_already_set();
    m.attr("Skip") = py::handle(skip_type);  // a new reference of its own; skip_type's is never released
}

Precision PrecisionSpec::for_data(DType data) const {
    Precision p;
    p.compute = type_named(compute, data, "compute");
    p.storage = storage.empty() ? p.compute : type_named(storage, data, "storage");
    if (!dequant.empty()) p.dequant = type_named(dequant, data, "dequant");
    return p;
}

PythonBackend::PythonBackend(py::function fn, std::string name, PrecisionSpec precision)
    : fn_(std::move(fn)), name_(std::move(name)), precision_(std::move(precision)) {
    precision_.for_data(DType::f32);  // refuse a bad name before any case runs
}

Output output_from_python(const py::handle& value, ExpertType type) {
    Output out;
    if (py::isinstance<py::tuple>(value)) {
        const auto t = py::reinterpret_borrow<py::tuple>(value);
        if (t.size() != 2 || !py::isinstance<py::dict>(t[1]))
            throw py::type_error("the function must return an output array or (output, {stage name: array})");
        out.output = from_numpy(t[0], "output");
        for (const auto& [k, v] : py::reinterpret_borrow<py::dict>(t[1])) {
            const std::string stage = py::str(k);
            check_stage_name(stage, type);
            out.stages.emplace(stage, from_numpy(v, "stage '" + stage + "'"));
        }
        return out;
    }
    out.output = from_numpy(value, "output");
    return out;
}

Output PythonBackend::run(const Problem& p, bool want_stages) {
    Output out = output_from_python(call(p), p.attributes.expert_type);
    if (!want_stages) out.stages.clear();
    return out;
}

py::object PythonBackend::call(const Problem& p) {
    // The runner's problem, borrowed for the call: no copy of the weights (the function under test
    // does not see the reference answer either: the case has no outputs).
    PythonCase c;
    c.data->borrowed = &p;
    const std::shared_ptr<CaseData> data = c.data;
    py::object case_object = py::cast(std::move(c));
    std::exception_ptr stop;
    std::string error;
    bool raised = false, skipped = false;
    py::object result;
    try {
        result = fn_(case_object);
    } catch (const py::error_already_set& e) {
        // Python's own rule (`except Exception`): an Exception is this case's ERROR, and so is
        // SystemExit: sys.exit(0) inside the kernel would otherwise end a CI job with status 0
        // after failures (a plugin's exit() is an ERROR too). KeyboardInterrupt (Ctrl-C) ends
        // the run. Only the message is kept: the exception's traceback holds fn's frame, and so
        // the case, which must let go of the runner's problem (below).
        raised = true;
        if (skip_type && e.matches(skip_type)) {
            // The reason the function gave: its message, as str(exc) says it.
            skipped = true;
            error = py::str(e.value()).cast<std::string>();
        } else if (e.matches(PyExc_Exception)) {
            error = e.what();
        } else if (e.matches(PyExc_SystemExit)) {
            std::string code = "None";
            try {
                code = py::str(e.value().attr("code")).cast<std::string>();
            } catch (const std::exception&) {
            }
            error = "the function raised SystemExit (sys.exit(" + code + ")) while running this case; the run goes on";
        } else {
            stop = std::current_exception();
        }
    }
    // fn is done with the case: one that Python still holds (fn stored it, or the traceback of a
    // KeyboardInterrupt does, for pdb.pm()) reads a copy of its own from now on, as the runner's
    // problem ends with this case.
    case_object = py::object();
    if (data.use_count() > 1) data->keep();
    if (stop) throw Stop{stop};
    if (skipped) throw conformance::CaseSkipped(error.empty() ? "the function raised moe_conform.Skip" : error);
    if (raised) throw std::runtime_error(error);
    return result;
}

}  // namespace moe::python
