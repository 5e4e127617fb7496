#pragma once
// The built-in backends, by name.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "moe/backends/backend.hpp"

namespace moe::backends {

std::vector<std::string> builtin_backend_names();
// Throws InputError naming the known backends when `name` is not one of them.
std::unique_ptr<Backend> make_builtin_backend(const std::string& name);

// Options some built-in backends take; the others ignore them.
struct BuiltinOptions {
    std::string device;  // opencl: "" (first GPU, else first device), "P:D", or a name substring
};
std::unique_ptr<Backend> make_builtin_backend(const std::string& name, const BuiltinOptions& options);

// The deliberately broken backends `moe-conform selftest` must catch: every backend adds its own.
struct Mutant {
    std::string name;
    std::string description;
    std::function<std::unique_ptr<Backend>()> make;
};
std::vector<Mutant> selftest_mutants();

}  // namespace moe::backends
