#pragma once
// The run's outputs must not land on what it reads (tools/common/cli_outputs.hpp, shared with
// moe-bench and moe-golden): checked before anything runs; InputError (exit 2) naming both paths.
#include "cli_outputs.hpp"

namespace moe::conform_cli {

using moe::cli::check_outputs_spare_inputs;
using moe::cli::RunPaths;

}  // namespace moe::conform_cli
