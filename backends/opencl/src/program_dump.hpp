#pragma once
// MOE_OPENCL_DUMP_BINARIES=DIR: every program the backend builds is also written to DIR as the
// driver returns it (CL_PROGRAM_BINARIES: PTX text on NVIDIA's OpenCL, an ELF or LLVM bitcode on
// others), with a note of its sources and build options beside it. A kernel writer reads there
// what the driver made of a kernel (whether a load became one vector instruction or eight, how
// many registers a body takes) on the device at hand, without a profiler or the vendor's tools.
// Unset: nothing is written.
#include <string>
#include <vector>

#include "cl_common.hpp"

namespace moe::backends::ocl {

// "" or what is wrong with MOE_OPENCL_DUMP_BINARIES: set but not a folder one can write into.
std::string dump_dir_problem();

// Writes `program`'s binary for `device` to DIR/<name>.bin and its sources and options to
// DIR/<name>.txt, each file whole or not at all (written beside, then renamed); <name> is the
// program's part (main, compressed, f64, tune) and a hash of its options, so the autotune's
// trials and a rebuild for smaller work-groups do not overwrite one another. Nothing when unset.
// Throws std::runtime_error naming the file it cannot write.
void dump_program_binary(cl_program program, cl_device_id device, const std::vector<std::string>& files,
                         const std::string& options);

}  // namespace moe::backends::ocl
