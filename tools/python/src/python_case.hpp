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

// A name or path from a golden file or the file system as a Python str: any bytes, not only
// UTF-8 (pybind11's own conversion raises UnicodeDecodeError, which ended a whole run_suite over
// one file's case name). Invalid bytes become lone surrogates ("surrogateescape"), as Python's os
// functions decode file names, so a path still opens the file it names.
pybind11::str text(const std::string& s);

// Binds moe_conform.Case.
void bind_case(pybind11::module_& m);

}  // namespace moe::python
