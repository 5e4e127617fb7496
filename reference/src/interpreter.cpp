#include "moe/reference/interpreter.hpp"

#include <algorithm>
#include <stdexcept>

#include "expert_stages.hpp"
#include "modes.hpp"

namespace moe::reference {

std::string_view mode_name(Mode m) { return m == Mode::dense ? "dense" : "sparse"; }

std::vector<std::string> stage_names(ExpertType t) {
    if (t == ExpertType::gemm2_bias_swiglu_clamp) return {"gate_up", "act", "down"};
    return {"gate", "up", "act", "down"};
}

namespace detail {
std::vector<std::pair<std::string, std::size_t>> stage_layout(ExpertType t, const Dims& d) {
    if (t == ExpertType::gemm2_bias_swiglu_clamp) return {{"gate_up", 2 * d.I}, {"act", d.I}, {"down", d.H}};
    return {{"gate", d.I}, {"up", d.I}, {"act", d.I}, {"down", d.H}};
}
}  // namespace detail

Result run(const Problem& problem, const Options& options) {
    const Dims d = validate(problem);
    const ResolvedParams rp = resolve(problem.attributes);
    Options o = options;
    o.threads = std::max(1, o.threads);
    if (o.rounded_stages != 0 && o.mode == Mode::dense)
        throw std::logic_error("reference::run: rounded stages are a sparse-mode reading");
    return o.mode == Mode::dense ? detail::run_dense(problem, d, rp, o) : detail::run_sparse(problem, d, rp, o);
}

}  // namespace moe::reference
