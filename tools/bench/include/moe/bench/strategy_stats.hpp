#pragma once
// moe-bench --strategy-stats and --worked-examples: the execution-strategy simulators' statistics
// from the routing alone (no data, nothing timed).
#include <cstddef>
#include <cstdio>
#include <vector>

#include "moe/bench/shapes.hpp"

namespace moe::bench {

struct StrategyOptions {
    DType dtype = DType::bf16;    // weight bytes per element
    double alpha = 1.0;           // decode: all-experts loading when batch*K >= alpha*E
    std::size_t block_size = 512;  // blockwise
    std::size_t devices = 8;       // expert_parallel
};

// The blockwise table, the expert_parallel table (uniform and skewed routing) and the decode
// selective vs all-experts loading table. Throws InputError on bad options.
void print_strategy_stats(std::FILE* out, const std::vector<Shape>& shapes, const std::vector<std::size_t>& tokens,
                          const StrategyOptions& o);

// The Neuron guide's worked example (1000 tokens, 8 experts, top-2, block 256), best and worst case.
void print_worked_examples(std::FILE* out);

}  // namespace moe::bench
