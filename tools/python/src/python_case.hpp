#pragma once
// A golden case as Python sees it (moe_conform.Case): its inputs as numpy arrays, its attributes
// as a dict, and the f64 reference when the case came from a file (a function under test, called
// by run_suite, gets the problem alone).
#include <pybind11/pybind11.h>

#include <string>

#include "moe/golden/golden_file.hpp"

namespace moe::python {

struct PythonCase {
    std::string file;
    golden::GoldenCase golden;  // outputs empty when the case is handed to a function under test
    // case.inputs, built on first use: a kernel loop reading case.inputs["..."] once per input
    // would otherwise copy every input, weights included, on each access.
    pybind11::object inputs;
};

// Binds moe_conform.Case.
void bind_case(pybind11::module_& m);

}  // namespace moe::python
