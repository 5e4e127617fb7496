#include "moe/backends/registry.hpp"

#include "moe/backends/blockwise_backend.hpp"
#include "moe/backends/cpu_backend.hpp"
#include "moe/backends/expert_parallel_backend.hpp"
#include "moe/backends/loop_backend.hpp"
#include "moe/backends/opencl_backend.hpp"
#include "moe/backends/reference_backend.hpp"
#include "moe/spec/error.hpp"

namespace moe::backends {

std::vector<std::string> builtin_backend_names() {
    return {"reference", "reference_dense", "loop_f32", "loop_lowp", "cpu", "opencl", "blockwise", "expert_parallel"};
}

std::unique_ptr<Backend> make_builtin_backend(const std::string& name, const BuiltinOptions& options) {
    if (name == "reference") return std::make_unique<ReferenceBackend>(false);
    if (name == "reference_dense") return std::make_unique<ReferenceBackend>(true);
    if (name == "loop_f32") return std::make_unique<LoopBackend>(LoopOptions{false, LoopMutation::none});
    if (name == "loop_lowp") return std::make_unique<LoopBackend>(LoopOptions{true, LoopMutation::none});
    if (name == "cpu") return std::make_unique<CpuBackend>();
    if (name == "blockwise") return std::make_unique<BlockwiseBackend>();
    if (name == "expert_parallel") return std::make_unique<ExpertParallelBackend>();
    if (name == "opencl") return std::make_unique<OpenclBackend>(OpenclOptions{options.device});
    std::string known;
    for (const auto& n : builtin_backend_names()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown backend '" + name + "' (built-in backends: " + known + ")");
}

std::vector<Mutant> selftest_mutants() {
    std::vector<Mutant> list;
    for (auto family : {loop_mutants, cpu_mutants, opencl_mutants, blockwise_mutants, expert_parallel_mutants})
        for (auto& m : family()) list.push_back(std::move(m));
    return list;
}

std::vector<std::string> device_list() { return opencl_device_list(); }

}  // namespace moe::backends
