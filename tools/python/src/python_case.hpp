#pragma once
// A golden case as Python sees it (moe_conform.Case): its inputs as numpy arrays, its attributes
// as a dict, and the f64 reference when the case came from a file (a function under test, called
// by run_suite, gets the problem alone).
#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "moe/golden/golden_file.hpp"

namespace moe::python {

// What a Case reads: a golden case it owns (load_case), or, while run_suite or shrink hands it to
// the function under test, the runner's problem borrowed for that call: a model-sized case would
// otherwise be copied once more (1.2 GB for Qwen3-30B-A3B decode) just to be shown to fn.
// Shared by the Case and its inputs mapping (which holds no reference to the Case: the Case and
// its arrays are freed as soon as fn lets go of them, not at the next garbage collection).
struct CaseData {
    golden::GoldenCase golden;  // outputs empty when the case is handed to a function under test
    const Problem* borrowed = nullptr;
    const Problem& problem() const { return borrowed ? *borrowed : golden.problem; }
    // The call is over but Python still holds the case (fn stored it, or its traceback does): from
    // now on it reads its own copy, as every case did before it was borrowed.
    void keep() {
        if (!borrowed) return;
        golden.problem = *borrowed;
        borrowed = nullptr;
    }
};

struct PythonCase {
    std::string file;
    std::shared_ptr<CaseData> data = std::make_shared<CaseData>();
    // case.inputs (moe_conform._Inputs), built on first use: a kernel loop reading
    // case.inputs["..."] once per input would otherwise convert every input on each access.
    pybind11::object inputs;
    const golden::GoldenCase& golden() const { return data->golden; }
    const Problem& problem() const { return data->problem(); }
};

// A name or path from a golden file or the file system as a Python str: any bytes, not only
// UTF-8 (pybind11's own conversion raises UnicodeDecodeError, which ended a whole run_suite over
// one file's case name). Invalid bytes become lone surrogates ("surrogateescape"), as Python's os
// functions decode file names, so a path still opens the file it names.
pybind11::str text(const std::string& s);

// Binds moe_conform.Case.
void bind_case(pybind11::module_& m);

}  // namespace moe::python
