#include "moe/backends/registry.hpp"

#include "moe/backends/loop_backend.hpp"
#include "moe/spec/error.hpp"
#include "reference_backend.hpp"

namespace moe::backends {

std::vector<std::string> builtin_backend_names() { return {"reference", "reference_dense", "loop_f32", "loop_lowp"}; }

std::unique_ptr<Backend> make_builtin_backend(const std::string& name) {
    if (name == "reference") return std::make_unique<ReferenceBackend>(false);
    if (name == "reference_dense") return std::make_unique<ReferenceBackend>(true);
    if (name == "loop_f32") return std::make_unique<LoopBackend>(LoopOptions{false, Mutation::none});
    if (name == "loop_lowp") return std::make_unique<LoopBackend>(LoopOptions{true, Mutation::none});
    std::string known;
    for (const auto& n : builtin_backend_names()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown backend '" + name + "' (built-in backends: " + known + ")");
}

}  // namespace moe::backends
