#pragma once
// `blockwise`: a simulator of the blockwise matrix multiplication (BWMM) of AWS Neuron's MoE
// kernels (AWS Neuron NxD Inference's MoE guide). The (token, slot) pairs are mapped to fixed-size blocks of block_size rows,
// one expert per block, padding rows marked -1; N = ceil(T*K / block_size) + (E - 1) blocks are
// provisioned (enough for any routing, dropless). Experts come in ascending id, tokens in ascending
// order inside an expert; the used blocks come first, the fully padded ones last. Blocks are then
// computed one by one in f32 (the expert MLP on the block's rows, times the routing weight, added
// into each token's output row), with the kernel's optional DMA token/weight skipping, dynamic
// block skipping, and the 2-core (LNC2) splits, each with its cross-core reduction.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "moe/spec/backend.hpp"
#include "moe/spec/mutant.hpp"
#include "moe/backends/routing_plan.hpp"

namespace moe::backends {

enum class BlockwiseSplit {
    none,            // one core computes every block
    h_sharded,       // core c holds half of H: first GEMM over its half of the hidden inputs (partial
                     // sums added across cores), down GEMM for its half of the hidden outputs
    i_sharded,       // core c holds half of I: first GEMM and activation for its half, down GEMM
                     // partial sums over its half added across cores
    block_parallel,  // core c computes blocks c, c + 2, ...; the two cores' outputs are added
};
const char* blockwise_split_name(BlockwiseSplit s);

enum class BlockwiseMutation {
    none,
    padding_row_counted,  // a -1 row computed with token 0's input and token 0's slot-0 weight, added to token 0
    block_wrong_expert,   // the second used expert's first block computed with the next expert's weights
};

struct BlockwiseOptions {
    std::size_t block_size = 4;  // small, so that the bundled cases get several blocks per expert and padding
    bool token_skipping = true;   // -1 rows are not loaded (otherwise loaded as zero rows, computed, discarded)
    bool weight_skipping = true;  // a core reuses its loaded weights when its next block has the same expert
    bool block_skipping = true;   // fully padded blocks are not computed
    BlockwiseSplit split = BlockwiseSplit::none;
    BlockwiseMutation mutation = BlockwiseMutation::none;
};

// The block mapping, from the per-expert pair counts alone.
struct BlockPlan {
    std::size_t block_size = 0, experts = 0;
    std::size_t pairs = 0;       // T * K = sum of counts
    std::size_t num_blocks = 0;  // N = ceil(pairs / block_size) + (E - 1)
    std::size_t used_blocks = 0; // blocks holding at least one real row (they come first)
    // [N] the expert of each block. A fully padded block carries the last used block's expert (0
    // when there is none): the kernel runs it with whatever weights it has.
    std::vector<std::size_t> block_expert;
    std::vector<std::size_t> block_real;  // [N] real rows in each block
    // [N * block_size] each row's index into the expert-major pair list (RoutingPlan::token/slot),
    // -1 for a padding row.
    std::vector<std::int64_t> rows;
};

// Throws InputError when block_size is 0.
BlockPlan plan_blocks(const std::vector<std::size_t>& counts, std::size_t block_size, std::size_t experts);

// The block contents as token ids (-1 padding): rows mapped through the routing plan.
std::vector<std::int64_t> block_tokens(const BlockPlan& plan, const RoutingPlan& routing);

struct BlockwiseStats {
    std::size_t block_size = 0, experts = 0, cores = 1;
    std::size_t real_rows = 0;           // T * K
    std::size_t blocks_provisioned = 0;  // N
    std::size_t blocks_used = 0;         // blocks with at least one real row
    std::size_t blocks_skipped = 0;      // fully padded blocks not computed (block skipping)
    std::size_t blocks_computed = 0;
    std::size_t provisioned_rows = 0;    // N * block_size: the guide's "total compute slots (actual)"
    std::size_t required_rows = 0;      // used blocks * block_size: the guide's "total compute slots (required)"
    std::size_t padding_rows = 0;       // N * block_size - T * K
    // The Neuron guide's worked example: (provisioned - required) / required, the padding provisioned to
    // handle the worst case.
    double padding_overhead = 0;
    // (required - T * K) / (T * K): the padding inside the used blocks.
    double algorithmic_padding_overhead = 0;
    // The Neuron guide's formula taken as a ratio: (N * block_size - T * K) / (T * K); the product of the
    // two above: (1 + total) = (1 + padding) * (1 + algorithmic).
    double total_padding_overhead = 0;
    // Token rows loaded (one row = H elements), with the options as set, and with token skipping
    // switched off (the other options unchanged).
    std::size_t token_loads = 0, token_loads_without_token_skipping = 0, token_loads_saved = 0;
    // Expert weight-set loads (a block's whole expert: the first GEMM's and the down GEMM's weights;
    // split across the two cores it still counts once), likewise with and without weight skipping.
    std::size_t weight_loads = 0, weight_loads_without_weight_skipping = 0, weight_loads_saved = 0;
    // Blocks computed without block skipping (= N) and the blocks it saves.
    std::size_t blocks_without_block_skipping = 0, blocks_saved = 0;
    // The Neuron guide's arithmetic intensity factor block_size * num_blocks / E, for the provisioned and
    // for the used blocks.
    double arithmetic_intensity = 0, arithmetic_intensity_used = 0;

    std::string to_text() const;
};

// The statistics of computing `plan` with `options` (pure: counts only, no data).
BlockwiseStats blockwise_stats(const BlockPlan& plan, const BlockwiseOptions& options);

class BlockwiseBackend : public Backend {
public:
    explicit BlockwiseBackend(BlockwiseOptions options = {});
    std::string name() const override;  // blockwise, or mutant:blockwise_<mutation>
    std::string description() const override;
    Support supports(const Problem& p) const override;
    Precision precision(DType data_type) const override;
    Output run(const Problem& p, bool want_stages) override;
    // The last run's statistics; token/weight loads and blocks are the ones the run counted.
    const BlockwiseStats& stats() const { return stats_; }
    const BlockwiseOptions& options() const { return options_; }

private:
    BlockwiseOptions options_;
    BlockwiseStats stats_;
};

// The blockwise mutants (every BlockwiseMutation but none).
std::vector<Mutant> blockwise_mutants();

}  // namespace moe::backends
