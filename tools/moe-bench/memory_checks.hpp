#pragma once
// What a moe-bench run would hold in memory, refused with the figure before anything is allocated
// (allocating it would end in bad_alloc, an internal error, or the OOM killer).
#include <cstddef>
#include <string>
#include <vector>

#include "moe/bench/shapes.hpp"
#include "moe/bench/strategy_stats.hpp"

namespace moe::bench_cli {

// This machine's physical memory in bytes (0 when the system does not say).
double machine_memory();

// InputError naming the shape when a layer of it at the largest of `tokens` (with `dtypes`, and
// `compressed_rows` compressed weight types; the cpu backend's packed copies too) needs more than
// this machine's memory.
void check_fits_memory(const std::vector<moe::bench::Shape>& shapes, const std::vector<std::size_t>& tokens,
                       const std::vector<std::string>& dtypes, std::size_t compressed_rows, bool cpu_backend);

// InputError naming the flag (--tokens, --block-size or a custom --experts) and its largest value
// here when --strategy-stats' routing tables would pass the mode's budget.
void check_strategy_size(const std::vector<moe::bench::Shape>& shapes, const std::vector<std::size_t>& tokens,
                         const moe::bench::StrategyOptions& o);

}  // namespace moe::bench_cli
