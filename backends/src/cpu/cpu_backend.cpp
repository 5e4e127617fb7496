#include "moe/backends/cpu_backend.hpp"

#include <thread>

#include "pipeline.hpp"
#include "small_m_kernels.hpp"

namespace moe::backends {

const std::vector<CpuMutationInfo>& cpu_mutation_catalogue() {
    static const std::vector<CpuMutationInfo> list = {
        {CpuMutation::tile_edge_dropped, "cpu_tile_edge_dropped",
         "cpu: the first GEMM leaves the last partial 16-column tile uncomputed"},
        {CpuMutation::wrong_expert_block, "cpu_wrong_expert_block",
         "cpu: the second used expert's first GEMM reads the next expert's weights"},
        {CpuMutation::scatter_race, "cpu_scatter_race",
         "cpu: lost updates in the scatter-reduce (even tokens keep only their last slot)"},
    };
    return list;
}

CpuBackend::CpuBackend(CpuOptions options)
    : options_(options),
      threads_(options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {}

std::string CpuBackend::name() const {
    for (const auto& m : cpu_mutation_catalogue())
        if (m.mutation == options_.mutation) return "mutant:" + m.name;
    return "cpu";
}

std::string CpuBackend::description() const {
    return std::string("routed CPU pipeline (mask_gen, gather, GEMMs, activation, scatter-reduce), ") +
           (cpu::small_m_uses_avx512() ? "AVX-512 kernels" : "portable kernels") + ", " + std::to_string(threads_) +
           " threads";
}

Support CpuBackend::supports(const Problem&) const { return {}; }

Precision CpuBackend::precision(DType data_type) const {
    if (data_type == DType::f64) return {DType::f64, DType::f64};
    return {DType::f32, DType::f32};
}

Output CpuBackend::run(const Problem& p, bool want_stages) {
    if (p.input(kHiddenStates).dtype() == DType::f64)
        return cpu::Pipeline<double>(p, threads_, options_.mutation).run(want_stages);
    return cpu::Pipeline<float>(p, threads_, options_.mutation).run(want_stages);
}

}  // namespace moe::backends
