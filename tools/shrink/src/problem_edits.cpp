#include "moe/shrink/problem_edits.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>

#include "moe/spec/compression.hpp"

namespace moe::shrink {

namespace {

bool gemm2(const Problem& p) { return p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp; }
bool nk(const Problem& p) { return resolve(p.attributes).weight_layout == WeightLayout::NK; }
bool compact(const Problem& p) { return resolve(p.attributes).routing_layout == RoutingLayout::compact; }

// The weight whose input dimension is H (the first GEMM's) or whose output dimension is H (the
// down GEMM's), and the axis of that dimension in the tensor's layout ([E, N, K] NK, [E, K, N] KN).
std::size_t input_axis(const Problem& p) { return nk(p) ? 2 : 1; }
std::size_t output_axis(const Problem& p) { return nk(p) ? 1 : 2; }
const char* down_weight(const Problem& p) { return gemm2(p) ? kWeight1 : kWeight2; }

bool compressed(const Problem& p, const char* weight) {
    return p.has(weight) && is_compressed_weight(p.input(weight).dtype());
}

// A weight's output rows `keep` (axis `axis`), and for a compressed weight (always NK, spec/
// compressed.md) its scale's and zero point's rows too, unless they are one row shared by all.
void select_outputs(Problem& q, const Problem& p, const char* weight, std::size_t axis, const Keep& keep) {
    q.inputs[weight] = select_axis(p.input(weight), axis, keep);
    if (!compressed(p, weight)) return;
    for (const std::string& param : {scale_input(weight), zero_point_input(weight)})
        if (p.has(param) && p.input(param).shape()[1] != 1) q.inputs[param] = select_axis(p.input(param), 1, keep);
}

// A weight's inputs `keep` (its K axis). A compressed weight's inputs come in groups that share a
// scale and zero point (spec/compressed.md): whole groups go, with their columns of those; false
// (nothing changed) when `keep` splits a group. Per channel (one group) any subset is one smaller
// group, and validate() refuses what the type cannot hold (an odd 4-bit K).
bool select_inputs(Problem& q, const Problem& p, const char* weight, const Keep& keep) {
    q.inputs[weight] = select_axis(p.input(weight), input_axis(p), keep);
    const auto c = compressed(p, weight) ? weight_compression(p, weight) : std::nullopt;
    if (!c || c->groups == 1) return true;
    Keep groups;
    for (std::size_t i = 0; i < keep.size(); i += c->group_size) {
        const std::size_t g = keep[i] / c->group_size, last = i + c->group_size - 1;  // keep is ascending
        if (keep[i] != g * c->group_size || last >= keep.size() || keep[last] != keep[i] + c->group_size - 1) return false;
        groups.push_back(g);
    }
    for (const std::string& param : {scale_input(weight), zero_point_input(weight)})
        if (p.has(param)) q.inputs[param] = select_axis(p.input(param), 2, groups);
    return true;
}

// How many of `weight`'s inputs go together: see hidden_unit.
std::size_t input_unit(const Problem& p, const char* weight) {
    const auto c = compressed(p, weight) ? weight_compression(p, weight) : std::nullopt;
    if (!c) return 1;
    if (c->groups > 1 || c->weight == DType::f4e2m1) return c->group_size;  // MXFP4: blocks of 32
    return dtype_bits(c->weight) == 4 ? 2 : 1;                            // an even 4-bit K
}

// A unit that both weights' units divide, or all `n` features when it does not divide n.
std::size_t common_unit(std::size_t n, std::size_t a, std::size_t b) {
    const std::size_t u = std::lcm(a, b);
    return n % u == 0 ? u : n;
}

// Rows of `row` elements: the rows `keep`, into `shape`.
Tensor gather_rows(const Tensor& t, std::size_t row, const Keep& keep, Shape shape) {
    Tensor out(t.dtype(), std::move(shape));
    std::vector<double> buf(row);
    for (std::size_t i = 0; i < keep.size(); ++i) {
        t.to_f64(keep[i] * row, row, buf.data());
        out.set_range(i * row, row, buf.data());
    }
    return out;
}

// The shape of a token-indexed tensor ([T, X] or [B, S, X]) holding T' tokens.
Shape token_shape(const Tensor& t, std::size_t tokens) {
    const std::size_t last = t.shape().back();
    return t.rank() == 3 ? Shape{1, tokens, last} : Shape{tokens, last};
}

}  // namespace

Tensor select_axis(const Tensor& t, std::size_t axis, const Keep& keep) {
    Shape shape = t.shape();
    std::size_t outer = 1, inner = 1;
    for (std::size_t a = 0; a < axis; ++a) outer *= shape[a];
    for (std::size_t a = axis + 1; a < shape.size(); ++a) inner *= shape[a];
    const std::size_t n = shape[axis];
    shape[axis] = keep.size();
    Tensor out(t.dtype(), shape);
    std::vector<double> buf(inner);
    for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t i = 0; i < keep.size(); ++i) {
            t.to_f64((o * n + keep[i]) * inner, inner, buf.data());
            out.set_range((o * keep.size() + i) * inner, inner, buf.data());
        }
    return out;
}

Problem keep_tokens(const Problem& p, const Keep& tokens) {
    const Dims d = validate(p);
    Problem q = p;
    const Tensor& x = p.input(kHiddenStates);
    q.inputs[kHiddenStates] = gather_rows(x, d.H, tokens, token_shape(x, tokens.size()));
    const Tensor& idx = p.input(kTopkIndices);
    q.inputs[kTopkIndices] = gather_rows(idx, d.K, tokens, token_shape(idx, tokens.size()));
    const Tensor& w = p.input(kRoutingWeights);
    if (compact(p)) {
        q.inputs[kRoutingWeights] = gather_rows(w, d.K, tokens, token_shape(w, tokens.size()));
    } else {  // [E, T, 1] or [E, B, S, 1]: per expert, the kept tokens
        Shape s = w.rank() == 4 ? Shape{d.E, 1, tokens.size(), 1} : Shape{d.E, tokens.size(), 1};
        Keep rows;
        for (std::size_t e = 0; e < d.E; ++e)
            for (std::size_t t : tokens) rows.push_back(e * d.T + t);
        q.inputs[kRoutingWeights] = gather_rows(w, 1, rows, s);
    }
    return q;
}

Problem keep_slots(const Problem& p, const Keep& slots) {
    const Dims d = validate(p);
    Problem q = p;
    const Tensor& idx = p.input(kTopkIndices);
    q.inputs[kTopkIndices] = select_axis(idx, idx.rank() - 1, slots);
    if (compact(p)) {
        const Tensor& w = p.input(kRoutingWeights);
        q.inputs[kRoutingWeights] = select_axis(w, w.rank() - 1, slots);
    } else {
        Tensor& w = q.inputs[kRoutingWeights];
        for (std::size_t t = 0; t < d.T; ++t)
            for (std::size_t k = 0; k < d.K; ++k)
                if (!std::binary_search(slots.begin(), slots.end(), k))
                    w.set(static_cast<std::size_t>(idx.get_index(t * d.K + k)) * d.T + t, 0.0);
    }
    return q;
}

Keep used_experts(const Problem& p) {
    const Tensor& idx = p.input(kTopkIndices);
    Keep used;
    for (std::size_t i = 0; i < idx.size(); ++i) used.push_back(static_cast<std::size_t>(idx.get_index(i)));
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());
    return used;
}

Problem keep_experts(const Problem& p, const Keep& experts) {
    Problem q = p;
    for (const auto& [name, t] : p.inputs)  // weights, biases, compressed weights' scales and zero points
        if (name != kHiddenStates && name != kRoutingWeights && name != kTopkIndices)
            q.inputs[name] = select_axis(t, 0, experts);
    if (!compact(p)) q.inputs[kRoutingWeights] = select_axis(p.input(kRoutingWeights), 0, experts);
    std::map<std::int64_t, std::int64_t> renumber;
    for (std::size_t i = 0; i < experts.size(); ++i) renumber[static_cast<std::int64_t>(experts[i])] = static_cast<std::int64_t>(i);
    Tensor& idx = q.inputs[kTopkIndices];
    for (std::size_t i = 0; i < idx.size(); ++i) idx.set_index(i, renumber.at(idx.get_index(i)));
    return q;
}

Problem keep_hidden(const Problem& p, const Keep& features) {
    Problem q = p;
    if (!select_inputs(q, p, kWeight0, features) || (!gemm2(p) && !select_inputs(q, p, kWeight1, features))) return p;
    const Tensor& x = p.input(kHiddenStates);
    q.inputs[kHiddenStates] = select_axis(x, x.rank() - 1, features);
    select_outputs(q, p, down_weight(p), output_axis(p), features);
    if (p.has(kBias1)) q.inputs[kBias1] = select_axis(p.input(kBias1), p.input(kBias1).rank() - 1, features);
    return q;
}

Problem keep_inter(const Problem& p, const Keep& features) {
    Problem q = p;
    if (!select_inputs(q, p, down_weight(p), features)) return p;  // its inputs are I
    Keep lanes = features;  // GEMM2: the gate and linear lanes 2j, 2j + 1 of gate_up
    if (gemm2(p)) {
        lanes.clear();
        for (std::size_t j : features) lanes.insert(lanes.end(), {2 * j, 2 * j + 1});
    }
    select_outputs(q, p, kWeight0, output_axis(p), lanes);
    if (gemm2(p) && p.has(kBias0)) q.inputs[kBias0] = select_axis(p.input(kBias0), p.input(kBias0).rank() - 1, lanes);
    if (!gemm2(p)) select_outputs(q, p, kWeight1, output_axis(p), features);
    return q;
}

std::size_t hidden_unit(const Problem& p) {
    return common_unit(validate(p).H, input_unit(p, kWeight0), gemm2(p) ? 1 : input_unit(p, kWeight1));
}

std::size_t inter_unit(const Problem& p) { return common_unit(validate(p).I, input_unit(p, down_weight(p)), 1); }

Problem drop_input(const Problem& p, const char* name) {
    Problem q = p;
    q.inputs.erase(name);
    return q;
}

Problem flatten_tokens(const Problem& p) {
    Problem q = p;
    auto flat = [](const Tensor& t, Shape s) {
        Tensor out(t.dtype(), std::move(s));
        std::vector<double> all = t.to_f64();
        out.set_range(0, all.size(), all.data());
        return out;
    };
    const Dims d = validate(p);
    q.inputs[kHiddenStates] = flat(p.input(kHiddenStates), {d.T, d.H});
    q.inputs[kTopkIndices] = flat(p.input(kTopkIndices), {d.T, d.K});
    q.inputs[kRoutingWeights] = flat(p.input(kRoutingWeights), compact(p) ? Shape{d.T, d.K} : Shape{d.E, d.T, 1});
    return q;
}

Problem zero_elements(const Problem& p, const char* input, const Keep& flat) {
    Problem q = p;
    Tensor& t = q.inputs[input];
    for (std::size_t i : flat) t.set(i, 0.0);
    return q;
}

Problem powers_of_two(const Problem& p, const char* input) {
    if (!is_floating(p.input(input).dtype())) return p;  // compressed codes: no such rounding
    Problem q = p;
    Tensor& t = q.inputs[input];
    for (std::size_t i = 0; i < t.size(); ++i) {
        const double v = t.get(i);
        if (v == 0.0 || !std::isfinite(v)) continue;
        int e;
        const double m = std::frexp(std::fabs(v), &e);  // |v| = m 2^e, m in [0.5, 1)
        t.set(i, std::copysign(std::ldexp(1.0, m < 0.75 ? e - 1 : e), v));
    }
    return q;
}

Keep nonzero_elements(const Problem& p, const char* input) {
    Keep out;
    if (!p.has(input)) return out;
    const Tensor& t = p.input(input);
    for (std::size_t i = 0; i < t.size(); ++i)
        if (t.get(i) != 0.0) out.push_back(i);
    return out;
}

std::string ProblemSize::to_string() const {
    return "T " + std::to_string(T) + ", K " + std::to_string(K) + ", E " + std::to_string(E) + ", H " +
           std::to_string(H) + ", I " + std::to_string(I) + ", " + std::to_string(nonzero_values) +
           " non-zero input values";
}

ProblemSize problem_size(const Problem& p) {
    const Dims d = validate(p);
    ProblemSize s{d.T, d.K, d.E, d.H, d.I, 0};
    for (const auto& [name, t] : p.inputs)
        if (name != kTopkIndices) s.nonzero_values += nonzero_elements(p, name.c_str()).size();
    return s;
}

}  // namespace moe::shrink
