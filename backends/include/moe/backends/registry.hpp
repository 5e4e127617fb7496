#pragma once
// The built-in backends, by name.
#include <memory>
#include <string>
#include <vector>

#include "moe/backends/backend.hpp"

namespace moe::backends {

std::vector<std::string> builtin_backend_names();
// Throws InputError naming the known backends when `name` is not one of them.
std::unique_ptr<Backend> make_builtin_backend(const std::string& name);

}  // namespace moe::backends
