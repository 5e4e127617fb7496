#pragma once
// Errors that cross module boundaries. Each maps to one exit code in the CLIs, so a CI can
// tell "your input is wrong" (2) from "the implementation is wrong" (1).
#include <stdexcept>
#include <string>

namespace moe {

// The problem given to the operation is malformed: a shape, a rank, an index, an attribute.
// The message names the input and the offending shape or element.
class InputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A file the user asked for cannot be written (a missing or read-only folder, a full disk): like
// bad input, a problem of the command line or the machine, not of the implementation under test.
class OutputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A backend reporting its own failure in its own words, as a C plugin does with a non-zero return
// code ("run() returned 3: out of device memory"): an ERROR whose reason is this message whole.
// A plugin does not throw, and "backend threw: ..." (what any other exception from prepare() or
// run() is reported as) would be C++ talk that hides the code the plugin returned.
class BackendFailed : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace moe
