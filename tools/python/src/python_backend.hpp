#pragma once
// A Python function as a backend: run_suite hands every case to fn(case) and judges what comes
// back with the one comparison engine. An Exception raised by fn is that case's ERROR (but
// moe_conform.Skip: SKIP); a KeyboardInterrupt ends the run (Stop).
#include <pybind11/pybind11.h>

#include <exception>
#include <string>

#include "moe/spec/backend.hpp"

namespace moe::python {

// Thrown through the runner, which turns every std::exception of a backend into that case's
// ERROR: this is not one. `error` is the Python exception to raise once out of the run.
struct Stop {
    std::exception_ptr error;
};

// The declared precision as Python spells it: a type name, or "data" for the case's own data
// type; storage "" (None) means the same as compute, and so does dequant "" (the type compressed
// weights are dequantised to, spec/compressed.md).
struct PrecisionSpec {
    std::string compute = "f32";
    std::string storage;
    std::string dequant;
    Precision for_data(DType data) const;  // throws InputError on an unknown name
};

class PythonBackend : public Backend {
public:
    PythonBackend(pybind11::function fn, std::string name, PrecisionSpec precision);
    std::string name() const override { return name_; }
    std::string description() const override { return "Python function " + name_; }
    Support supports(const Problem&) const override { return {}; }
    Precision precision(DType data_type) const override { return precision_.for_data(data_type); }
    bool provides_stages() const override { return true; }
    Output run(const Problem& p, bool want_stages) override;

private:
    pybind11::object call(const Problem& p);  // fn(case); throws Stop on KeyboardInterrupt, SystemExit

    pybind11::function fn_;
    std::string name_;
    PrecisionSpec precision_;
};

// moe_conform.Skip, made in `m`: fn raises Skip("reason") for a case it does not handle (another
// expert type, a shape it has no kernel for): that case is SKIP with the reason, not an ERROR.
void bind_skip(pybind11::module_& m);

// What fn returned: an output array, or (output, {stage name: array}). A stage name that `type`
// does not have is an InputError naming the ones it has.
Output output_from_python(const pybind11::handle& value, ExpertType type);

}  // namespace moe::python
