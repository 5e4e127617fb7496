#include "golden_rules.hpp"

#include "moe/spec/compression.hpp"
#include "moe/spec/error.hpp"

namespace moe::golden {

std::string where_root_attr(const std::string& name) { return "root attribute '" + name + "'"; }

std::string where_attr(const std::string& name, const std::string& object_path) {
    return "attribute '" + name + "' of " + object_path;
}

bool is_known_input(const std::string& name) { return is_input_name(name); }

std::string known_inputs_list() {
    std::string out;
    for (const char* n : kInputNames) out += (out.empty() ? "" : ", ") + std::string(n);
    return out + "; for compressed weights <weight>_scale, <weight>_zero_point";
}

void check_dataset_name(const std::string& group_path, const std::string& name, const h5::FileContext& ctx) {
    if (name.empty() || name == "." || name.find('/') != std::string::npos)
        ctx.malformed("group " + group_path, "invalid dataset name '" + name + "'");
}

void check_outputs_f64(const std::map<std::string, Tensor>& tensors, const std::string& group_path,
                       const h5::FileContext& ctx) {
    for (const auto& [name, t] : tensors)
        if (t.dtype() != DType::f64)
            ctx.malformed("dataset " + group_path + "/" + name,
                          "must be f64, is " + std::string(dtype_name(t.dtype())));
}

void check_inputs_known(const std::map<std::string, Tensor>& inputs, const h5::FileContext& ctx) {
    for (const auto& [name, t] : inputs)
        if (!is_known_input(name))
            ctx.malformed("dataset /inputs/" + name, "unknown input name (expected one of " + known_inputs_list() + ")");
}

void check_output_shape(const GoldenCase& c, const h5::FileContext& ctx) {
    auto out = c.outputs.find(kOutputName);
    auto hidden = c.problem.inputs.find(kHiddenStates);
    if (out == c.outputs.end()) return;
    // The dense reading and the error-bound magnitudes are per output element.
    for (const auto& [name, t] : c.outputs)
        if ((name == "output_dense" || name.rfind("bound_", 0) == 0) && t.shape() != out->second.shape())
            ctx.malformed("dataset /outputs/" + name, "shape " + shape_to_string(t.shape()) +
                                                          " differs from /outputs/output " +
                                                          shape_to_string(out->second.shape()));
    if (hidden == c.problem.inputs.end()) return;
    if (out->second.shape() != hidden->second.shape())
        ctx.malformed("dataset /outputs/output", "shape " + shape_to_string(out->second.shape()) +
                                                     " differs from /inputs/hidden_states " +
                                                     shape_to_string(hidden->second.shape()));
}

ResolvedParams resolve_or_fail(const OpAttributes& a, const h5::FileContext& ctx) {
    try {
        return resolve(a);
    } catch (const InputError& e) {
        ctx.malformed("op attributes", e.what());
    }
}

}  // namespace moe::golden
