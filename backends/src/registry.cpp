#include "moe/backends/registry.hpp"

#include "moe/backends/blockwise_backend.hpp"
#include "moe/backends/cpu_backend.hpp"
#include "moe/backends/expert_parallel_backend.hpp"
#include "moe/backends/loop_backend.hpp"
#include "moe/backends/opencl_backend.hpp"
#include "moe/spec/error.hpp"
#include "reference_backend.hpp"

namespace moe::backends {

std::vector<std::string> builtin_backend_names() { return {"reference", "reference_dense", "loop_f32", "loop_lowp", "cpu", "opencl", "blockwise", "expert_parallel"}; }

std::unique_ptr<Backend> make_builtin_backend(const std::string& name) { return make_builtin_backend(name, {}); }

std::unique_ptr<Backend> make_builtin_backend(const std::string& name, const BuiltinOptions& options) {
    if (name == "reference") return std::make_unique<ReferenceBackend>(false);
    if (name == "reference_dense") return std::make_unique<ReferenceBackend>(true);
    if (name == "loop_f32") return std::make_unique<LoopBackend>(LoopOptions{false, Mutation::none});
    if (name == "loop_lowp") return std::make_unique<LoopBackend>(LoopOptions{true, Mutation::none});
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
    for (const auto& m : mutation_catalogue())
        list.push_back({m.name, m.description, [m] { return std::make_unique<LoopBackend>(LoopOptions{false, m.mutation}); }});
    for (const auto& m : cpu_mutation_catalogue())
        list.push_back({m.name, m.description, [m] { return std::make_unique<CpuBackend>(CpuOptions{0, m.mutation}); }});
    for (const auto& m : opencl_mutation_catalogue())
        list.push_back({m.name, m.description, [m] { return std::make_unique<OpenclBackend>(OpenclOptions{"", m.mutation}); }});
    for (const auto& m : blockwise_mutation_catalogue()) {
        BlockwiseOptions o;
        o.mutation = m.mutation;
        list.push_back({m.name, m.description, [o] { return std::make_unique<BlockwiseBackend>(o); }});
    }
    for (const auto& m : expert_parallel_mutation_catalogue()) {
        ExpertParallelOptions o;
        o.mutation = m.mutation;
        list.push_back({m.name, m.description, [o] { return std::make_unique<ExpertParallelBackend>(o); }});
    }
    return list;
}

}  // namespace moe::backends
