#include "numpy_tensor.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace py = pybind11;

namespace moe::python {

namespace {

std::vector<py::ssize_t> dims(const Shape& s) { return std::vector<py::ssize_t>(s.begin(), s.end()); }

// A copy of the tensor's bytes as an array of `dtype` (same element size).
py::array raw(const Tensor& t, const py::dtype& dtype) {
    py::array a(dtype, dims(t.shape()));
    if (t.nbytes()) std::memcpy(a.mutable_data(), t.data(), t.nbytes());
    return a;
}

// The element type of an output array, whatever its byte order.
DType float_type(const py::dtype& d, const std::string& what) {
    const char kind = d.kind();
    const auto size = d.itemsize();
    if (kind == 'f' && size == 8) return DType::f64;
    if (kind == 'f' && size == 4) return DType::f32;
    if (kind == 'f' && size == 2) return DType::f16;
    throw py::type_error(what + " must hold float64, float32 or float16 values, not " +
                         std::string(py::str(py::handle(d))));
}

// The array's values as a C-contiguous array in this machine's byte order (a copy only where
// needed): a big-endian array, a transposed view or a slice with a step holds the same values as
// its native, contiguous copy, and only that copy's bytes can be read as a Tensor.
py::array native_c_order(const py::array& a, DType dt) {
    const py::dtype native = dt == DType::f64 ? py::dtype::of<double>()
                             : dt == DType::f32 ? py::dtype::of<float>()
                                                : py::dtype("float16");
    return a.attr("astype")(native, py::arg("order") = "C", py::arg("copy") = false);
}

}  // namespace

py::array to_numpy(const Tensor& t) {
    switch (t.dtype()) {
        case DType::f64: return raw(t, py::dtype::of<double>());
        case DType::f32: return raw(t, py::dtype::of<float>());
        case DType::f16: return raw(t, py::dtype("float16"));
        case DType::i32: return raw(t, py::dtype::of<std::int32_t>());
        case DType::i64: return raw(t, py::dtype::of<std::int64_t>());
        case DType::bf16: {
            // A bf16 value is the upper half of the float32 with the same value: widening is a
            // shift of its bits (exact, NaN payloads kept), not a conversion per element through
            // double, which took 16 s for Qwen3-30B-A3B's 1.2 GB of weights.
            py::array_t<float> a(dims(t.shape()));
            auto* out = static_cast<std::uint32_t*>(static_cast<void*>(a.mutable_data()));
            const unsigned char* in = t.data();
            for (std::size_t i = 0; i < t.size(); ++i) {
                std::uint16_t bits;
                std::memcpy(&bits, in + 2 * i, sizeof bits);
                out[i] = static_cast<std::uint32_t>(bits) << 16;
            }
            return a;
        }
        // Compressed weights and their scales and zero points (spec/compressed.md): one element per
        // byte, as the golden file stores them: integers as their values (int8 for i8 and i4),
        // the float codes (f4e2m1, f8e4m3, f8e5m2, f8e8m0) as their bit patterns.
        case DType::u8: case DType::u4: case DType::f4e2m1: case DType::f8e4m3: case DType::f8e5m2:
        case DType::f8e8m0: case DType::i8: case DType::i4: {
            const bool is_signed = t.dtype() == DType::i8 || t.dtype() == DType::i4;
            const py::dtype type = is_signed ? py::dtype::of<std::int8_t>() : py::dtype::of<std::uint8_t>();
            if (dtype_bits(t.dtype()) == 8) return raw(t, type);  // one byte per element in memory too
            py::array a(type, dims(t.shape()));
            const std::vector<std::uint8_t> bytes = t.element_bytes();
            if (!bytes.empty()) std::memcpy(a.mutable_data(), bytes.data(), bytes.size());
            return a;
        }
    }
    throw std::logic_error("to_numpy: a tensor of an unknown element type");  // every DType is a case above
}

Tensor from_numpy(const py::handle& value, const std::string& what) {
    if (!py::isinstance<py::array>(value))
        throw py::type_error(what + " must be a numpy array (a torch tensor: .detach().cpu().float().numpy()), got " +
                             std::string(py::str(py::type::of(value))));
    const auto a = py::reinterpret_borrow<py::array>(value);
    const DType dt = float_type(a.dtype(), what);
    Shape shape;
    for (py::ssize_t i = 0; i < a.ndim(); ++i) shape.push_back(static_cast<std::size_t>(a.shape(i)));
    Tensor t(dt, shape);
    const py::array c = native_c_order(a, dt);
    if (t.nbytes()) std::memcpy(t.data(), c.data(), t.nbytes());
    return t;
}

}  // namespace moe::python
