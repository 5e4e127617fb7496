#include "compressed_inputs.hpp"

#include "golden_rules.hpp"

namespace moe::golden {

namespace {

// Only a weight can be compressed: an integer hidden_states or bias is a wrong type, which
// validation names, not a reason to ask for format_version 2.
bool is_compressed(const std::string& name, const Tensor& t) {
    return is_compression_input(name) || (is_weight_name(name) && is_compressed_weight(t.dtype()));
}

}  // namespace

std::int64_t format_version_for(const std::map<std::string, Tensor>& inputs) {
    for (const auto& [name, t] : inputs)
        if (is_compressed(name, t)) return 2;
    return 1;
}

void check_inputs_for_version(const std::map<std::string, Tensor>& inputs, std::int64_t version,
                              const h5::FileContext& ctx) {
    if (version >= 2) return;
    for (const auto& [name, t] : inputs)
        if (is_compressed(name, t))
            ctx.malformed("dataset /inputs/" + name,
                          "compressed weights (element type " + std::string(dtype_name(t.dtype())) +
                              ") need format_version 2, the file says 1");
}

std::map<std::string, std::int64_t> group_sizes(const std::map<std::string, Tensor>& inputs,
                                                const h5::FileContext& ctx) {
    std::map<std::string, std::int64_t> out;
    for (const char* w : kWeightNames) {
        auto it = inputs.find(w);
        if (it == inputs.end() || !is_compressed_weight(it->second.dtype())) continue;
        auto s = inputs.find(scale_input(w));
        const Shape& ws = it->second.shape();
        if (s == inputs.end() || ws.size() != 3 || s->second.rank() < 3 || s->second.shape()[2] == 0 ||
            ws[2] % s->second.shape()[2] != 0)
            ctx.malformed("dataset /inputs/" + std::string(w),
                          "a compressed weight needs /inputs/" + scale_input(w) +
                              " of shape [E, N, G] with G dividing K, to give its group_size");
        out[w] = static_cast<std::int64_t>(ws[2] / s->second.shape()[2]);
    }
    return out;
}

void check_group_sizes(const std::map<std::string, Tensor>& inputs,
                       const std::map<std::string, std::int64_t>& declared, const h5::FileContext& ctx) {
    for (const auto& [name, gs] : declared) {
        const std::string where = where_attr(kGroupSizeAttr, "/inputs/" + name);
        auto w = inputs.find(name);
        if (w == inputs.end() || !is_compressed_weight(w->second.dtype()))
            ctx.malformed(where, "is given but /inputs/" + name + " is not a compressed weight");
        const Shape& ws = w->second.shape();
        if (ws.size() != 3 || gs <= 0 || ws[2] % static_cast<std::size_t>(gs) != 0)
            ctx.malformed(where, "is " + std::to_string(gs) + ", which does not divide K = " +
                                     (ws.size() == 3 ? std::to_string(ws[2]) : std::string("?")) + " of " +
                                     shape_to_string(ws));
        auto s = inputs.find(scale_input(name));
        if (s == inputs.end() || s->second.rank() < 3) continue;  // validate() names the missing scale
        const std::size_t G = s->second.shape()[2];
        if (G * static_cast<std::size_t>(gs) != ws[2])
            ctx.malformed(where, "is " + std::to_string(gs) + " but /inputs/" + scale_input(name) + " " +
                                     shape_to_string(s->second.shape()) + " has G = " + std::to_string(G) +
                                     " groups along K = " + std::to_string(ws[2]) + " (group size " +
                                     (G ? std::to_string(ws[2] / G) : std::string("?")) + ")");
    }
}

}  // namespace moe::golden
