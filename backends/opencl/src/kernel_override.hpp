#pragma once
// MOE_OPENCL_KERNEL_DIR: a folder whose kernels/*.cl files replace the embedded copies of the same
// name when programs are built, so that a kernel change can be tried on a device (a GPU lent for
// minutes, with no compiler for the tools) without rebuilding them. Files the folder lacks come
// from the embedded copies. Unset: the embedded copies only.
#include <string>
#include <vector>

namespace moe::backends::ocl {

// The text of each of `files` found in the folder, "" for the others (all, when unset). Throws
// std::runtime_error naming a file that exists but cannot be read.
std::vector<std::string> kernel_overrides(const std::vector<std::string>& files);

// "" or what is wrong with MOE_OPENCL_KERNEL_DIR (set but not a folder).
std::string kernel_dir_problem();

}  // namespace moe::backends::ocl
