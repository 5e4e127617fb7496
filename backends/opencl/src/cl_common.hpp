#pragma once
// The OpenCL headers as this backend uses them, and errors reported by name with the call that
// failed ("clBuildProgram failed: CL_BUILD_PROGRAM_FAILURE").
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <stdexcept>
#include <string>

namespace moe::backends::ocl {

// "CL_INVALID_VALUE"; unknown codes as "unknown OpenCL error -1234".
std::string cl_error_name(cl_int code);

class ClError : public std::runtime_error {
public:
    ClError(const std::string& call, cl_int code, const std::string& detail = "");
    cl_int code() const { return code_; }

private:
    cl_int code_;
};

inline void check(cl_int code, const char* call) {
    if (code != CL_SUCCESS) throw ClError(call, code);
}

}  // namespace moe::backends::ocl
