#pragma once
// The routed MoE pipeline, for compute type S (float or double). One instance per run.
#include <cmath>
#include <vector>

#include "expert_gemm.hpp"
#include "moe/backends/backend.hpp"
#include "moe/backends/cpu_backend.hpp"
#include "moe/backends/routing_plan.hpp"

namespace moe::backends::cpu {

template <class S>
class Pipeline {
public:
    Pipeline(const Problem& p, int threads, CpuMutation mutation);
    Output run(bool want_stages);

private:
    void gather();
    void run_expert(std::size_t e, bool second_used);
    void activation(std::size_t begin, std::size_t end);
    Tensor scatter_reduce() const;
    Tensor stage(const std::vector<S>& buf, std::size_t width) const;

    const Problem& p_;
    Dims d_;
    ResolvedParams rp_;
    bool gemm2_;
    int threads_;
    CpuMutation mutation_;
    RoutingPlan plan_;
    std::size_t n0_;  // first GEMM width
    // Per routed pair (expert-major, plan order): inputs, first GEMM(s), activation, down.
    std::vector<S> x_, first_, up_, act_, down_;
    std::vector<S> slot_weight_;  // [T * K], the routing weight of each (token, slot)
};

}  // namespace moe::backends::cpu
