#pragma once
// MOE_OPENCL_KERNEL_DIR: a folder of .cl files, each named as one of the embedded kernel files
// (backends/opencl/src/kernels/: common.cl, gemm_gpu.cl, swiglu.cl, ...), that replace the
// embedded copies when programs are built, so that a kernel change can be tried on a device (a
// GPU lent for minutes, with no compiler for the tools) without rebuilding them. Files the
// folder lacks come from the embedded copies. Unset: the embedded copies only.
#include <string>
#include <vector>

namespace moe::backends::ocl {

// The text of each of `files` found in the folder, "" for the others (all, when unset). Throws
// std::runtime_error naming a file that exists but cannot be read.
std::vector<std::string> kernel_overrides(const std::vector<std::string>& files);

// The embedded file names the folder replaces, sorted (none when unset).
std::vector<std::string> replaced_kernels();

// "" or what is wrong with MOE_OPENCL_KERNEL_DIR: set but not a folder, a .cl file in it that
// replaces no kernel (a typo would otherwise go unnoticed, and an A/B compare A with A), or no
// kernel's file in it at all (say they sit in a subfolder).
std::string kernel_dir_problem();

}  // namespace moe::backends::ocl
