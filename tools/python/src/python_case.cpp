#include "python_case.hpp"

#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <numeric>

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

// The indices in `experts` (a list, a range, numpy or torch integers). A negative index is refused,
// not counted from the end: routing code marks a dropped slot with -1, which must not become E - 1.
std::vector<std::size_t> expert_indices(const std::string& where, std::size_t E, const py::handle& experts) {
    const std::string valid = " (valid: 0 to " + std::to_string(E - 1) + ", E = " + std::to_string(E) + ")";
    if (!py::isinstance<py::iterable>(experts))
        throw py::value_error(where + ": experts= takes an iterable of expert indices, e.g. numpy.unique(indices), "
                              "not " + std::string(py::repr(experts)));
    std::vector<std::size_t> out;
    for (const py::handle item : experts) {
        // A bool is an int to Python, but [True, False] is a mask, not experts 1 and 0.
        PyObject* index = PyBool_Check(item.ptr()) ? nullptr : PyNumber_Index(item.ptr());
        if (!index) {
            PyErr_Clear();
            throw py::value_error(where + ": expert index " + std::string(py::repr(item)) + " is not an integer" +
                                  valid);
        }
        const py::int_ number = py::reinterpret_steal<py::int_>(index);
        int overflow = 0;
        const long long e = PyLong_AsLongLongAndOverflow(number.ptr(), &overflow);
        if (overflow || e < 0 || static_cast<unsigned long long>(e) >= E)
            throw py::value_error(where + ": expert index " + std::string(py::repr(number)) + " is out of range" +
                                  valid + (e < 0 && !overflow ? "; a negative index is not counted from the end" : ""));
        out.push_back(static_cast<std::size_t>(e));
    }
    return out;
}

// float32 holds (W - Z) * S exactly when S has at most 11 significand bits (f16, bf16, E8M0; W - Z
// has at most 8) and the value is within float32's range, which bf16 and E8M0 scales can leave.
// The scale type is refused up front (the answer does not depend on the values); each value is
// still checked against its float64 value, so a float32 array is never a rounded one.
void store_f32(const std::string& where, std::size_t e, std::size_t n, const std::vector<double>& row, float* out) {
    for (std::size_t k = 0; k < row.size(); ++k) {
        const double v = row[k];
        const bool in_range = std::fabs(v) <= std::numeric_limits<float>::max();
        if (std::isfinite(v) && !(in_range && static_cast<float>(v) == v))
            throw py::value_error(where + ": expert " + std::to_string(e) + " [" + std::to_string(n) + ", " +
                                  std::to_string(k) + "] = " + golden::shortest_decimal(v) + " is not exact in float32" +
                                  (in_range ? "" : " (beyond its range)") + "; use float64");
        out[k] = static_cast<float>(v);
    }
}

// Each chosen expert is dequantised into its slice of a numpy array and no other expert is read:
// a decode step routes to 4 of GPT-OSS-20B's 32 experts, whose weight_0 is 4.2 GB of float64. The
// array is numpy's own (tracemalloc counts it), written once: no second copy of the weight.
py::array dequantized(const PythonCase& c, const std::string& weight, const py::object& experts,
                      const py::object& dtype) {
    const Problem& p = c.problem();
    if (!p.has(weight) || !is_compressed_weight(p.input(weight).dtype()))
        throw py::value_error(weight + " is not a compressed weight of case " + printable(p.name));
    const std::string where = "case " + printable(p.name) + ", " + weight;
    const WeightCompression w = *weight_compression(p, weight);
    std::vector<std::size_t> chosen(w.E);
    std::iota(chosen.begin(), chosen.end(), std::size_t{0});
    if (!experts.is_none()) chosen = expert_indices(where, w.E, experts);
    const py::dtype type = dtype.is_none() ? py::dtype::of<double>() : py::dtype::from_args(dtype);
    const bool f32 = type.kind() == 'f' && type.itemsize() == 4;
    if (!f32 && !(type.kind() == 'f' && type.itemsize() == 8))
        throw py::value_error(where + ": dtype= takes float64 (the default) or float32, not " +
                              std::string(py::str(py::handle(type))));
    if (f32 && w.scale == DType::f32)
        throw py::value_error(where + " has f32 scales: (W - Z) * S needs up to 32 significand bits and float32 would "
                              "round them; dtype=float32 is exact only with f16, bf16 or E8M0 scales; use float64");
    const std::size_t size = w.N * w.K;
    const std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(chosen.size()), static_cast<py::ssize_t>(w.N),
                                         static_cast<py::ssize_t>(w.K)};
    if (!f32) {
        py::array_t<double> out(shape);
        double* data = out.mutable_data();
        for (std::size_t i = 0; i < chosen.size(); ++i)
            dequantize_rows(p, weight, w, chosen[i], 0, w.N, data + i * size);
        return std::move(out);
    }
    py::array_t<float> out(shape);
    float* data = out.mutable_data();
    std::vector<double> row(w.K);  // a row at a time: one expert of GPT-OSS-20B's weight_0 is 133 MB in float64
    for (std::size_t i = 0; i < chosen.size(); ++i)
        for (std::size_t n = 0; n < w.N; ++n) {
            dequantize_rows(p, weight, w, chosen[i], n, 1, row.data());
            store_f32(where, chosen[i], n, row, data + i * size + n * w.K);
        }
    return std::move(out);
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
        .def("dequantized", &dequantized, py::arg("weight"), py::kw_only(), py::arg("experts") = py::none(),
             py::arg("dtype") = py::none(),
             "a compressed weight's values (W - Z) * S per group, exact, as float64 [E, N, K] "
             "(spec/compressed.md); case.inputs holds its codes, scale and zero point as stored. "
             "experts: expert indices (any iterable of integers, e.g. numpy.unique of the routing indices): "
             "only those experts are dequantised, as [len(experts), N, K] in the order given (an index given "
             "twice comes twice); one outside 0 to E - 1 (negative too) or not an integer is a ValueError. "
             "dtype: float32 halves the array where every value is exact in float32 (f16, bf16 or E8M0 scales); "
             "f32 scales, or a value beyond float32's range, are a ValueError saying so")
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
