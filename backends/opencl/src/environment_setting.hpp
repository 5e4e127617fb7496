#pragma once
// The opencl backend's settings from the environment (MOE_OPENCL_*, and the cache folders): a
// variable set to the empty string counts as unset, as `MOE_OPENCL_GEMM= moe-bench ...` means.
#include <cstdlib>
#include <optional>
#include <string>

namespace moe::backends::ocl {

// The value of the variable `name`; nullopt when it is unset or empty.
inline std::optional<std::string> environment_setting(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) return std::nullopt;
    return std::string(v);
}

}  // namespace moe::backends::ocl
