#pragma once
// A deliberately broken backend that `moe-conform selftest` must catch: the one record every
// backend family uses to export its mutants, so that the selftest sees data, not families.
#include <functional>
#include <memory>
#include <string>

#include "moe/spec/backend.hpp"

namespace moe {

struct Mutant {
    std::string name;         // unique over the project, e.g. "cpu_tile_edge_dropped"
    std::string family;       // the backend family it breaks: "loop", "cpu", "opencl", ...
    std::string description;  // one line: the bug it plants
    std::function<std::unique_ptr<Backend>()> make;
};

}  // namespace moe
