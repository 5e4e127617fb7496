#pragma once
// moe-bench's default mode, the timing itself: which backend is timed, and its rows, each
// printed as it is measured. main.cpp reads the flags; plugin_child.hpp runs this in a child
// process for a --backend-lib plugin.
#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "moe/backends/registry.hpp"
#include "moe/bench/backend_timing.hpp"
#include "moe/bench/shapes.hpp"

namespace moe::bench_cli {

// The one backend moe-bench times: without --backend-lib, a built-in one by name; with it, a
// loaded plugin (the only one, or the one --backend names). InputError naming what is wrong
// otherwise. A built-in --backend beside --backend-lib is refused: that plugin was loaded and
// silently not timed (as moe-conform run refuses a loaded plugin its --backend leaves out).
moe::BackendMaker backend_maker(const std::string& backend, bool backend_given, const std::vector<std::string>& libs,
                                const std::string& device);

// What time_rows times: the layers, and how.
struct RowPlan {
    std::vector<bench::Shape> shapes;
    std::vector<std::size_t> tokens;
    std::vector<std::string> dtypes, weights;
    std::string routing, device;
    int threads = 1;
    bench::TimingOptions timing;
};

// Times the rows, printing the table to `table` (each row as it is measured) and handing each
// measured row to `measured` (for --json). A row whose problem the backend declines (supports())
// is not timed: its line says "skipped: BACKEND: not supported: REASON". When it declines every
// row, InputError (exit 2, as for an unavailable backend) with the first reason: nothing was
// timed. Returns the exit status (0).
using RowSink = std::function<void(const bench::BenchRow&)>;
int time_rows(const moe::BackendMaker& maker, const RowPlan& plan, std::FILE* table, const RowSink& measured);

}  // namespace moe::bench_cli
