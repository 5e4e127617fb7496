#pragma once
// The GEMM sizes a runtime builds with. On a GPU: a short autotune (gemm_candidates, each built
// as a trial program and timed on one tiled GEMM), cached per device name and driver version
// in this process and in a file (MOE_OPENCL_TUNE_CACHE, else $XDG_CACHE_HOME/moe-conform/
// opencl-tune.txt or ~/.cache/moe-conform/opencl-tune.txt; MOE_OPENCL_TUNE_CACHE=off keeps it
// in memory only). On a CPU device, or with MOE_OPENCL_GEMM set: choose_gemm_config, untimed.
#include <string>

#include "gemm_config.hpp"

namespace moe::backends::ocl {

class Runtime;

GemmConfig gemm_config_for(const Runtime& rt);

// What the tune on this device measured in this process, one line ("128x128 k16 wg256 31000
// GFLOP/s, ..."), or "" when none ran (a cached choice, a CPU device).
std::string tune_report(const DeviceInfo& d);

}  // namespace moe::backends::ocl
