#pragma once
// --device must name an OpenCL device that exists: a typo would otherwise make every opencl case
// SKIP (exit 77, or 0 beside another backend), which a CI reads as "nothing to test here".
// Checked before anything runs; InputError (exit 2) naming the devices found.
#include <string>

namespace moe::conform_cli {

// Asks in a child process: the run forks its case workers later, and a parent that has loaded
// an OpenCL driver must not fork (drivers keep threads and device state that a child inherits
// broken). No platform at all is not an error here: the backend is then unavailable, as on any
// machine without a driver, and says so.
void check_device_exists(const std::string& spec);

// --device given where no opencl backend or mutant runs: InputError (exit 2) naming `what_runs`
// (run, selftest and shrink). It was ignored by run and shrink (exit 0), while moe-bench refused it.
void refuse_unused_device(const std::string& device, bool opencl_runs, const std::string& what_runs);

// The opencl backend's environment variables (MOE_OPENCL_STAGING, MOE_OPENCL_GEMM,
// MOE_OPENCL_KERNEL_DIR), when set, must be well formed: a malformed one would make the backend
// (and its mutants) unavailable and their cases SKIP. InputError (exit 2) naming the variable.
// Nothing is loaded: the values are only parsed, the folder only listed.
void check_opencl_environment();

}  // namespace moe::conform_cli
