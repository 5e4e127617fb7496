#include "python_case.hpp"

#include <pybind11/stl.h>

#include "moe/spec/compression.hpp"
#include "moe/spec/printable.hpp"
#include "numpy_tensor.hpp"

namespace py = pybind11;

namespace moe::python {

namespace {

// Hands case.inputs its arrays one at a time (moe_conform._Inputs caches them): a function that
// reads the hidden states and the routing alone, or a compressed weight's dequantized() values
// rather than its codes, never pays for converting every weight (bf16 widened to float32 is twice
// the file's size).
struct InputSource {
    std::shared_ptr<CaseData> data;
    std::vector<std::string> names() const {
        std::vector<std::string> n;
        for (const auto& [name, t] : data->problem().inputs) n.push_back(name);
        return n;
    }
    py::object convert(const std::string& name) const {
        const auto& in = data->problem().inputs;
        const auto it = in.find(name);
        if (it == in.end()) throw py::key_error(name);
        return to_numpy(it->second);
    }
};

py::object inputs(PythonCase& c) {
    if (!c.inputs) c.inputs = py::module_::import("moe_conform").attr("_Inputs")(InputSource{c.data});
    return c.inputs;
}

py::dict input_types(const PythonCase& c) {
    py::dict d;
    for (const auto& [name, t] : c.problem().inputs) d[py::str(name)] = std::string(dtype_name(t.dtype()));
    return d;
}

py::dict attrs(const PythonCase& c) {
    const Problem& p = c.problem();
    const OpAttributes& a = p.attributes;
    const ResolvedParams r = resolve(a);
    const Dims d = validate(p);
    py::dict out;
    out["expert_type"] = std::string(expert_type_name(a.expert_type));
    out["convention"] = std::string(convention_name(a.convention));
    out["expert_alpha"] = a.expert_alpha;
    out["expert_beta"] = a.expert_beta;
    out["gate_idx"] = a.gate_idx ? py::object(py::int_(*a.gate_idx)) : py::object(py::none());
    // The resolved meaning (spec/README.md): what a kernel needs, whatever the convention.
    out["swish_beta"] = r.swish_beta;
    out["clamp_limit"] = r.clamp_limit;
    out["gate_lane"] = r.gate_lane;
    out["weight_layout"] = std::string(weight_layout_name(r.weight_layout));
    out["routing_layout"] = std::string(routing_layout_name(r.routing_layout));
    out["T"] = d.T;
    out["H"] = d.H;
    out["I"] = d.I;
    out["E"] = d.E;
    out["K"] = d.K;
    return out;
}

py::array dequantized(const PythonCase& c, const std::string& weight) {
    const Problem& p = c.problem();
    if (!p.has(weight) || !is_compressed_weight(p.input(weight).dtype()))
        throw py::value_error(weight + " is not a compressed weight of case " + printable(p.name));
    // Moved into the array, not copied: GPT-OSS-20B's weight_0 is 4.2 GB of float64.
    return to_numpy(dequantize_weight(p, weight, DType::f64));
}

}  // namespace

py::str text(const std::string& s) {
    PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
    if (!o) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(o);
}

void bind_case(py::module_& m) {
    py::class_<InputSource>(m, "_InputSource")
        .def("names", &InputSource::names)
        .def("convert", &InputSource::convert, py::arg("name"));
    py::class_<PythonCase>(m, "Case", "One golden case: inputs, attributes and (from a file) the f64 reference.")
        .def_property_readonly("name", [](const PythonCase& c) { return text(c.problem().name); })
        .def_property_readonly("file", [](const PythonCase& c) { return text(c.file); })
        .def_property_readonly("inputs", &inputs, "read-only mapping of op input name -> numpy array (bf16 as float32 values; compressed weights, scales and zero points one element per byte: uint8, int8 for i8/i4). Each array is made when first read and is the same object after that; they are copies of the file's data (writing into them changes no verdict)")
        .def_property_readonly("input_types", &input_types, "dict: input name -> stored element type (f32, bf16, ...)")
        .def("dequantized", &dequantized, py::arg("weight"),
             "a compressed weight's values (W - Z) * S per group, exact, as float64 [E, N, K] "
             "(spec/compressed.md); case.inputs holds its codes, scale and zero point as stored")
        .def_property_readonly("attrs", &attrs, "op attributes as given, their resolved meaning, and T, H, I, E, K")
        .def_property_readonly("expert_type", [](const PythonCase& c) {
            return std::string(expert_type_name(c.problem().attributes.expert_type));
        })
        .def_property_readonly("convention", [](const PythonCase& c) {
            return std::string(convention_name(c.problem().attributes.convention));
        })
        .def_property_readonly("data_type", [](const PythonCase& c) {
            return std::string(dtype_name(c.problem().input(kHiddenStates).dtype()));
        })
        .def_property_readonly("exact", [](const PythonCase& c) { return c.golden().exact; })
        .def_property_readonly(
            "reference",
            [](const PythonCase& c) -> py::object {
                const auto it = c.golden().outputs.find("output");
                return it == c.golden().outputs.end() ? py::object(py::none()) : py::object(to_numpy(it->second));
            },
            "the f64 reference output (None inside run_suite: the function under test does not see it)")
        .def("__repr__", [](const PythonCase& c) { return text("<moe_conform.Case " + c.problem().name + ">"); });
}

}  // namespace moe::python
