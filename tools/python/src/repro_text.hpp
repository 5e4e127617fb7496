#pragma once
// The pieces of the Python door's repro lines: Python source text that reruns what was judged.
#include <pybind11/pybind11.h>

#include <optional>
#include <string>

#include "python_case.hpp"

namespace moe::python {

// Python's literal for a string (quotes and backslashes escaped; bytes that are not UTF-8 kept,
// as text() keeps them).
inline std::string literal(const std::string& s) { return pybind11::repr(text(s)).cast<std::string>(); }

// The declared precision as keyword arguments, the defaults left out: a repro line without them
// would rerun a bf16 kernel under the f32 bound and fail it.
inline std::string precision_args(const std::string& compute, const std::optional<std::string>& storage,
                                  const std::optional<std::string>& dequant) {
    std::string a;
    if (compute != "f32") a += ", compute=" + literal(compute);
    if (storage) a += ", storage=" + literal(*storage);
    if (dequant) a += ", dequant=" + literal(*dequant);
    return a;
}

}  // namespace moe::python
