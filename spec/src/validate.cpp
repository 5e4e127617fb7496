// Input rules of spec/README.md, "Rejected inputs". Everything here runs before any arithmetic.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "moe/spec/compression.hpp"
#include "moe/spec/error.hpp"
#include "moe/spec/problem.hpp"

namespace moe {

const Tensor& Problem::input(const std::string& n) const {
    auto it = inputs.find(n);
    if (it == inputs.end()) throw InputError("required input " + n + " is missing");
    return it->second;
}

namespace {

std::string fmt(double v) {
    std::ostringstream s;
    s.precision(17);
    s << v;
    return s.str();
}

void expect_shape(const std::string& name, const Tensor& t, const Shape& want, const std::string& meaning) {
    if (t.shape() != want)
        throw InputError(name + ": expected shape " + shape_to_string(want) + " (" + meaning +
                         ") but got " + shape_to_string(t.shape()));
}

void expect_rank(const std::string& name, const Tensor& t, std::size_t rank, const std::string& meaning) {
    if (t.rank() != rank)
        throw InputError(name + ": expected rank " + std::to_string(rank) + " (" + meaning + ") but got shape " +
                         shape_to_string(t.shape()));
}

// A bias may be [E, 1, N] or [E, N].
void check_bias(const Problem& p, const char* name, std::size_t E, std::size_t N) {
    if (!p.has(name)) return;
    const Tensor& b = p.input(name);
    if (b.shape() != Shape{E, 1, N} && b.shape() != Shape{E, N})
        throw InputError(std::string(name) + ": expected shape " + shape_to_string({E, 1, N}) + " or " +
                         shape_to_string({E, N}) + " ([E, 1, N] or [E, N]) but got " + shape_to_string(b.shape()));
}

// Checks one weight of shape [E, N, K] (layout NK) or [E, K, N] (layout KN).
void check_weight(const Problem& p, const char* name, WeightLayout layout, std::size_t E, std::size_t N,
                  std::size_t K, const char* n_sym, const char* k_sym) {
    const Tensor& w = p.input(name);
    const bool nk = layout == WeightLayout::NK;
    const Shape want = nk ? Shape{E, N, K} : Shape{E, K, N};
    const std::string meaning = std::string("[E, ") + (nk ? n_sym : k_sym) + ", " + (nk ? k_sym : n_sym) +
                                "] for weight_layout " + std::string(weight_layout_name(layout));
    expect_rank(name, w, 3, meaning);
    if (w.shape()[0] != E)
        throw InputError(std::string(name) + ": has " + std::to_string(w.shape()[0]) + " experts (dim 0 of shape " +
                         shape_to_string(w.shape()) + ") but weight_0 has " + std::to_string(E));
    expect_shape(name, w, want, meaning);
}

}  // namespace

namespace {
Dims validate_impl(const Problem& p, bool check_values);
}  // namespace

Dims validate(const Problem& p) { return validate_impl(p, true); }
Dims validate_structure(const Problem& p) { return validate_impl(p, false); }

namespace {

Dims validate_impl(const Problem& p, bool check_values) {
    const OpAttributes& a = p.attributes;
    const ResolvedParams r = resolve(a);
    const bool gemm2 = a.expert_type == ExpertType::gemm2_bias_swiglu_clamp;

    // Which inputs the expert type takes.
    std::vector<std::string> required = {kHiddenStates, kRoutingWeights, kTopkIndices, kWeight0, kWeight1};
    if (!gemm2) required.push_back(kWeight2);
    for (const auto& n : required)
        if (!p.has(n))
            throw InputError("required input " + n + " is missing (" + std::string(expert_type_name(a.expert_type)) +
                             " needs " + std::to_string(required.size()) + " inputs" + (gemm2 ? ", 7 with both biases" : "") + ")");
    for (const auto& [n, t] : p.inputs) {
        (void)t;
        if (!is_input_name(n)) throw InputError("unknown input " + n);
        if (gemm2 && n == kWeight2)
            throw InputError("input weight_2 is given but GEMM2_BIAS_SWIGLU_CLAMP has two GEMMs");
        if (!gemm2 && (n == kBias0 || n == kBias1))
            throw InputError("input " + n + " is given but GEMM3_SWIGLU takes no biases");
    }

    // Element types: one floating type T for all data, i32/i64 for the indices.
    const Tensor& x = p.input(kHiddenStates);
    if (!is_floating(x.dtype()))
        throw InputError("hidden_states: element type " + std::string(dtype_name(x.dtype())) +
                         " is not a floating type (f64, f32, f16, bf16)");
    for (const auto& [n, t] : p.inputs) {
        const bool weight = n == kWeight0 || n == kWeight1 || n == kWeight2;
        if (n == kTopkIndices) {
            if (!is_index_type(t.dtype()))
                throw InputError("router_topk_output_indices: element type " + std::string(dtype_name(t.dtype())) +
                                 " is not an index type (i32, i64)");
        } else if (weight && is_compressed_weight(t.dtype())) {
            continue;  // its scale and zero point are checked with the shapes (validate_compression)
        } else if (n.find("_scale") != std::string::npos || n.find("_zero_point") != std::string::npos) {
            continue;  // a compressed weight's own types
        } else if (t.dtype() != x.dtype()) {
            throw InputError(n + ": element type " + std::string(dtype_name(t.dtype())) +
                             " differs from hidden_states' " + std::string(dtype_name(x.dtype())) +
                             " (all data inputs share the op's type T" +
                             (weight ? "; a weight may instead be compressed: u8, i8, u4, i4, f4e2m1, f8e4m3, f8e5m2"
                                     : std::string()) +
                             ")");
        }
    }

    Dims d;
    // hidden_states [T, H] or [B, S, H].
    if (x.rank() != 2 && x.rank() != 3)
        throw InputError("hidden_states: expected rank 2 [T, H] or rank 3 [B, S, H] but got shape " +
                         shape_to_string(x.shape()));
    d.hidden_rank3 = x.rank() == 3;
    d.H = x.shape().back();
    d.B = d.hidden_rank3 ? x.shape()[0] : 1;
    d.S = d.hidden_rank3 ? x.shape()[1] : x.shape()[0];
    d.T = element_count({d.B, d.S}, "hidden_states");
    if (d.H == 0) throw InputError("hidden_states: hidden size (last dim) is 0 in shape " + shape_to_string(x.shape()));

    // Compressed weights exist in OpenVINO's NK layout only: said before the shapes are read in
    // the convention's layout, whose complaint (an input size that does not match) would hide it.
    check_compressed_layout(p, r.weight_layout);

    // Expert count and intermediate size from weight_0.
    const Tensor& w0 = p.input(kWeight0);
    expect_rank(kWeight0, w0, 3, "[E, N, K] or [E, K, N]");
    d.E = w0.shape()[0];
    if (d.E == 0) throw InputError("weight_0: zero experts in shape " + shape_to_string(w0.shape()));
    const std::size_t n0 = r.weight_layout == WeightLayout::NK ? w0.shape()[1] : w0.shape()[2];
    const std::size_t k0 = r.weight_layout == WeightLayout::NK ? w0.shape()[2] : w0.shape()[1];
    if (k0 != d.H)
        throw InputError("weight_0: shape " + shape_to_string(w0.shape()) + " has input size " + std::to_string(k0) +
                         " for weight_layout " + std::string(weight_layout_name(r.weight_layout)) +
                         " but hidden_states has hidden size " + std::to_string(d.H));
    if (gemm2) {
        if (n0 % 2 != 0 || n0 == 0)
            throw InputError("weight_0: fused gate_up width " + std::to_string(n0) + " in shape " +
                             shape_to_string(w0.shape()) + " must be even and non-zero (2 * inter_size)");
        d.I = n0 / 2;
        check_weight(p, kWeight0, r.weight_layout, d.E, 2 * d.I, d.H, "2I", "H");
        check_weight(p, kWeight1, r.weight_layout, d.E, d.H, d.I, "H", "I");
        check_bias(p, kBias0, d.E, 2 * d.I);
        check_bias(p, kBias1, d.E, d.H);
    } else {
        d.I = n0;
        if (d.I == 0) throw InputError("weight_0: inter size is 0 in shape " + shape_to_string(w0.shape()));
        check_weight(p, kWeight0, r.weight_layout, d.E, d.I, d.H, "I", "H");
        check_weight(p, kWeight1, r.weight_layout, d.E, d.I, d.H, "I", "H");
        check_weight(p, kWeight2, r.weight_layout, d.E, d.H, d.I, "H", "I");
    }
    validate_compression(p, r.weight_layout, check_values);

    // Indices [T, K] or [B, S, K].
    const Tensor& idx = p.input(kTopkIndices);
    const bool idx_flat = idx.rank() == 2 && idx.shape()[0] == d.T;
    const bool idx_bs = d.hidden_rank3 && idx.rank() == 3 && idx.shape()[0] == d.B && idx.shape()[1] == d.S;
    if (!idx_flat && !idx_bs)
        throw InputError("router_topk_output_indices: expected shape [T, K] with T = " + std::to_string(d.T) +
                         (d.hidden_rank3 ? " or [B, S, K] = [" + std::to_string(d.B) + ", " + std::to_string(d.S) + ", K]"
                                         : std::string()) +
                         " (the leading dims of hidden_states " + shape_to_string(x.shape()) + ") but got " +
                         shape_to_string(idx.shape()));
    d.K = idx.shape().back();
    if (d.K < 1 || d.K > d.E)
        throw InputError("router_topk_output_indices: top-k = " + std::to_string(d.K) + " (last dim of " +
                         shape_to_string(idx.shape()) + ") must be in [1, E = " + std::to_string(d.E) + "]");
    for (std::size_t t = 0; t < d.T; ++t) {
        for (std::size_t k = 0; k < d.K; ++k) {
            const std::int64_t e = idx.get_index(t * d.K + k);
            if (e < 0 || e >= static_cast<std::int64_t>(d.E))
                throw InputError("router_topk_output_indices: element [token " + std::to_string(t) + ", slot " +
                                 std::to_string(k) + "] = " + std::to_string(e) + " is outside [0, E = " +
                                 std::to_string(d.E) + ")");
            for (std::size_t j = 0; j < k; ++j)
                if (idx.get_index(t * d.K + j) == e)
                    throw InputError("router_topk_output_indices: token " + std::to_string(t) + " selects expert " +
                                     std::to_string(e) + " twice (slots " + std::to_string(j) + " and " +
                                     std::to_string(k) + ")");
        }
    }

    // Routing weights.
    const Tensor& rw = p.input(kRoutingWeights);
    if (r.routing_layout == RoutingLayout::compact) {
        if (rw.shape() != idx.shape())
            throw InputError("routing_weights: compact routing must have the shape of router_topk_output_indices " +
                             shape_to_string(idx.shape()) + " but got " + shape_to_string(rw.shape()));
    } else {
        const Shape want = d.hidden_rank3 ? Shape{d.E, d.B, d.S, 1} : Shape{d.E, d.T, 1};
        // Rank-2 hidden states: [E, T, 1], or the rank-4 forms OpenVINO's GEMM3 test builders
        // make, [E, T, 1, 1] and [E, 1, T, 1] (errata E5); all three hold w(t, e) at e * T + t.
        const bool rank4_form = !d.hidden_rank3 && (rw.shape() == Shape{d.E, d.T, 1, 1} || rw.shape() == Shape{d.E, 1, d.T, 1});
        if (!rank4_form)
            expect_shape(kRoutingWeights, rw, want,
                         d.hidden_rank3 ? "dense routing [E, B, S, 1]"
                                        : "dense routing [E, T, 1]; [E, T, 1, 1] and [E, 1, T, 1] are accepted too");
        // Dense weights must vanish off the selected experts: the sparse and dense readings agree
        // only then, and every real router guarantees it.
        for (std::size_t e = 0; e < d.E; ++e) {
            for (std::size_t t = 0; t < d.T; ++t) {
                const double w = rw.get(e * d.T + t);
                if (w == 0.0) continue;
                bool selected = false;
                for (std::size_t k = 0; k < d.K && !selected; ++k)
                    selected = idx.get_index(t * d.K + k) == static_cast<std::int64_t>(e);
                if (!selected)
                    throw InputError("routing_weights: dense weight for expert " + std::to_string(e) + ", token " +
                                     std::to_string(t) + " is " + fmt(w) +
                                     " but the token does not select that expert in router_topk_output_indices");
            }
        }
    }
    return d;
}

}  // namespace

}  // namespace moe
