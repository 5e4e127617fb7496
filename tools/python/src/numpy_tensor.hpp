#pragma once
// Tensors to and from numpy. Inputs keep their values exactly: f16 as numpy float16, bf16 as
// float32 values (numpy has no bf16; the stored type is reported beside them). Outputs may be
// float64, float32 or float16 arrays; anything else is refused with the name of what was given.
#include <pybind11/numpy.h>

#include <string>

#include "moe/spec/tensor.hpp"

namespace moe::python {

pybind11::array to_numpy(const Tensor& t);

// `what` names the value in messages ("output", "stage 'act'").
Tensor from_numpy(const pybind11::handle& value, const std::string& what);

}  // namespace moe::python
