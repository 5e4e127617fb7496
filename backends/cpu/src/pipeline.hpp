#pragma once
// The routed MoE pipeline, for compute type S (float or double). One instance per run.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "cache_line_vector.hpp"
#include "expert_gemm.hpp"
#include "onednn_matmul.hpp"
#include "moe/spec/backend.hpp"
#include "moe/backends/cpu_backend.hpp"
#include "moe/backends/routing_plan.hpp"

namespace moe::backends::cpu {

// Buffers kept by the backend between runs, so that a run does not page-fault fresh memory.
template <class S>
struct Workspace {
    CacheLineVector<S> x, first, up, act, down;
};

template <class S>
class Pipeline {
public:
    // `prepared`: weights in the library's layout from CpuBackend::prepare (by input name), or null.
    // `products`: the decode kernels' products for 4-bit weights (cpu_backend.hpp).
    Pipeline(const Problem& p, int threads, CpuMutation mutation, Workspace<S>& ws,
             const std::map<std::string, PackedWeights>* prepared = nullptr,
             DecodeProducts products = DecodeProducts::automatic);
    Output run(bool want_stages);

private:
    void gather();
    void run_expert(std::size_t e, bool second_used, int threads);
    void activation(std::size_t begin, std::size_t end, int threads);
    Tensor scatter_reduce() const;
    Tensor stage(const CacheLineVector<S>& buf, std::size_t width) const;

    GemmCall call(const char* weight, std::size_t e) const;

    const Problem& p_;
    const std::map<std::string, PackedWeights>* prepared_;
    Dims d_;
    ResolvedParams rp_;
    bool gemm2_;
    int threads_;
    CpuMutation mutation_;
    DecodeProducts products_;
    RoutingPlan plan_;
    std::size_t n0_;  // first GEMM width
    // Per routed pair (expert-major, plan order): inputs, first GEMM(s), activation, down.
    CacheLineVector<S>& x_;
    CacheLineVector<S>& first_;
    CacheLineVector<S>& up_;
    CacheLineVector<S>& act_;
    CacheLineVector<S>& down_;
    std::vector<S> slot_weight_;  // [T * K], the routing weight of each (token, slot)
};

}  // namespace moe::backends::cpu
