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
    // The weights only: a scale beside a weight that is not compressed is a mistake of its own,
    // which validation names (asking for format_version 2 would not help).
    for (const auto& [name, t] : inputs)
        if (is_weight_name(name) && is_compressed_weight(t.dtype()))
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

void check_group_sizes(const std::map<std::string, DeclaredInput>& inputs,
                       const std::map<std::string, std::int64_t>& declared, const h5::FileContext& ctx) {
    for (const auto& [name, gs] : declared) {
        const std::string where = where_attr(kGroupSizeAttr, "/inputs/" + name);
        auto w = inputs.find(name);
        if (w == inputs.end()) continue;
        if (!is_compressed_weight(w->second.dtype)) {
            if (is_floating(w->second.dtype))
                ctx.malformed(where, "is given but /inputs/" + name + " is not a compressed weight (element type " +
                                         std::string(dtype_name(w->second.dtype)) + ")");
            continue;  // a type no weight has: validation names it
        }
        const Shape& ws = w->second.shape;
        if (ws.size() != 3) continue;  // validation names the rank
        if (gs <= 0 || ws[2] % static_cast<std::size_t>(gs) != 0)
            ctx.malformed(where, "is " + std::to_string(gs) + ", which does not divide K = " + std::to_string(ws[2]) +
                                     " of " + shape_to_string(ws));
        auto s = inputs.find(scale_input(name));
        if (s == inputs.end()) continue;  // validation names the missing scale
        const Shape& ss = s->second.shape;
        const bool shaped = ss.size() == 3 || (ss.size() == 4 && ss[3] == 1);
        if (!shaped || ss[2] == 0 || ws[2] % ss[2] != 0) continue;  // validation names the scale's shape
        const std::size_t G = ss[2];
        if (G * static_cast<std::size_t>(gs) != ws[2])
            ctx.malformed(where, "is " + std::to_string(gs) + " but /inputs/" + scale_input(name) + " " +
                                     shape_to_string(ss) + " has G = " + std::to_string(G) + " groups along K = " +
                                     std::to_string(ws[2]) + " (group size " + std::to_string(ws[2] / G) + ")");
    }
}

}  // namespace moe::golden
