#pragma once
// The run's outputs must not land on what it reads: a report written over a golden file or the
// expectation file, result files written into the suite's folder (over its golden files, of the
// same names), two reports on one path. Checked before anything runs; InputError (exit 2)
// naming both paths.
#include <string>
#include <utility>
#include <vector>

namespace moe::conform_cli {

struct RunPaths {
    std::vector<std::string> inputs;                              // golden files, expectation file, result files read
    std::vector<std::pair<std::string, std::string>> reports;     // (flag, file) of --json, --junit, --html
    std::vector<std::string> result_folders;                      // where --write-results writes
};

void check_outputs_spare_inputs(const RunPaths& paths);

}  // namespace moe::conform_cli
