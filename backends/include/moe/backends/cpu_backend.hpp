#pragma once
// `cpu`: the routed pipeline of seed 001 on the CPU. route (mask_gen) -> gather the routed rows
// per expert -> first GEMM(s) -> activation -> down GEMM (+ bias) -> scatter-reduce, weighted,
// in top-k slot order. f32 arithmetic for f32/f16/bf16 inputs (weights read in their own type),
// f64 for f64 inputs. Threads split each GEMM's output columns (decode) or rows (prefill), so a
// hot expert is shared by all threads.
#include <string>
#include <vector>

#include "moe/backends/backend.hpp"

namespace moe::backends {

enum class CpuMutation {
    none,
    tile_edge_dropped,   // the first GEMM leaves the last partial 16-column tile uncomputed
    wrong_expert_block,  // the second used expert's first GEMM reads the next expert's weights
    scatter_race,        // lost updates in the scatter-reduce: even tokens keep only their last slot
};

struct CpuMutationInfo {
    CpuMutation mutation;
    std::string name;
    std::string description;
};
const std::vector<CpuMutationInfo>& cpu_mutation_catalogue();

struct CpuOptions {
    int threads = 0;  // 0: every hardware thread
    CpuMutation mutation = CpuMutation::none;
};

class CpuBackend : public Backend {
public:
    explicit CpuBackend(CpuOptions options = {});
    std::string name() const override;
    std::string description() const override;
    Support supports(const Problem& p) const override;
    Precision precision(DType data_type) const override;
    bool provides_stages() const override { return true; }
    Output run(const Problem& p, bool want_stages) override;
    int threads() const { return threads_; }

private:
    CpuOptions options_;
    int threads_;
};

}  // namespace moe::backends
