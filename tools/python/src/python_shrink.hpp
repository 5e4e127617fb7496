#pragma once
// moe_conform.shrink(fn, case_file, ...): `moe-conform shrink` for a Python function, so that a
// kernel behind PyTorch (or anything Python calls) gets the same small failing case and repro.
#include <pybind11/pybind11.h>

namespace moe::python {

void bind_shrink(pybind11::module_& m);

}  // namespace moe::python
