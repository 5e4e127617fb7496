// loop_f32, loop_lowp and the mutants: the operation as plain f32 loops, token by token and slot
// by slot. Written from the semantics alone, independently of the reference, so that the two
// check each other; every mutant is this code with one deliberate mistake switched on.
#include "moe/backends/loop_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "loop_dequant.hpp"
#include "lowp_numerics.hpp"
#include "moe/backends/mutation_table.hpp"
#include "moe/spec/problem.hpp"

namespace moe::backends {

namespace {

constexpr MutationEntry<LoopMutation> kLoopMutations[] = {
    {LoopMutation::lanes_swapped, "lanes_swapped", "GEMM2: the swish (gate) and clamp (linear) lanes of gate_up exchanged"},
    {LoopMutation::alpha_beta_swapped, "alpha_beta_swapped", "the swish beta and the clamp limit exchanged"},
    {LoopMutation::plus_one_dropped, "plus_one_dropped", "GEMM2: (clamp(lin, -L, L) + 1) computed as clamp(lin, -L, L)"},
    {LoopMutation::clamp_lower_dropped, "clamp_lower_dropped", "GEMM2: clamp(lin, -L, L) computed as min(lin, L)"},
    {LoopMutation::zero_limit_unclamped, "zero_limit_unclamped",
     "GEMM2: a clamp limit of 0 (both conventions' default) read as no clamp at all"},
    {LoopMutation::clamp_nan_dropped, "clamp_nan_dropped",
     "GEMM2: the linear lane's clamp turns NaN into -L, as max(-L, min(x, L)) does with std::max or vmaxps"},
    {LoopMutation::gate_nan_capped, "gate_nan_capped",
     "GEMM2: the gate's cap turns NaN into L, as fminf(x, L) or std::min(L, x) do"},
    {LoopMutation::minimum_dropped, "minimum_dropped", "GEMM2: min(gate, L) computed as gate"},
    {LoopMutation::bias0_dropped, "bias0_dropped", "GEMM2: bias_0 ignored"},
    {LoopMutation::bias1_dropped, "bias1_dropped", "GEMM2: bias_1 ignored"},
    {LoopMutation::swish_beta_one, "swish_beta_one", "swish beta taken as 1 whatever the attributes say"},
    {LoopMutation::routing_slot_shifted, "routing_slot_shifted", "the routing weight of slot (k + 1) mod K applied to slot k"},
    {LoopMutation::last_expert_ignored, "last_expert_ignored", "expert E - 1 contributes nothing to the output"},
    {LoopMutation::token_output_to_neighbour, "token_output_to_neighbour",
     "token 0's output added into token 1's row, token 0's row left zero"},
    {LoopMutation::gemm3_up_ignored, "gemm3_up_ignored", "GEMM3: act = swish(gate), the up projection ignored"},
    {LoopMutation::f16_accumulation, "f16_accumulation",
     "every GEMM partial sum and the top-k sum rounded to f16 while declaring f32 compute"},
    {LoopMutation::hidden_off_by_one, "hidden_off_by_one", "the first GEMM's dot products skip the last hidden element"},
    {LoopMutation::lowp_output_truncated, "lowp_output_truncated",
     "loop_lowp whose conversions to f16/bf16 (stored intermediates and the output) truncate instead of rounding to nearest even"},
    {LoopMutation::small_weight_routes_skipped, "small_weight_routes_skipped",
     "routes whose routing weight is below 1e-4 in magnitude are skipped"},
    {LoopMutation::subnormal_weights_flushed, "subnormal_weights_flushed",
     "routing weights that are subnormal in the data type are flushed to zero"},
    {LoopMutation::subnormal_gemm_weights_flushed, "subnormal_gemm_weights_flushed",
     "GEMM weights that are subnormal in the data type read as zero, as a bf16 dot-product instruction's DAZ does"},
    {LoopMutation::tf32_gemm_inputs, "tf32_gemm_inputs",
     "every GEMM input (x, weights, activations) rounded to TF32's 10-bit mantissa while declaring f32 compute"},
    {LoopMutation::bias1_after_routing, "bias1_after_routing",
     "GEMM2: bias_1 added once after the routing sum, weighted by the token's weights renormalised to sum 1"},
    {LoopMutation::topk_capped_at_4, "topk_capped_at_4",
     "only the first 4 top-k slots of a token are summed, as a kernel with a fixed 4-entry top-k buffer (Qwen3 and DeepSeek-V3 use K = 8)"},
    {LoopMutation::experts_from_32_ignored, "experts_from_32_ignored",
     "experts with id 32 or above contribute nothing, as a kernel that keeps a token's experts in a 32-bit mask"},
    {LoopMutation::gemm3_gate_idx_swapped, "gemm3_gate_idx_swapped",
     "GEMM3: openvino gate_idx 1 read as weight_1 being the gate projection, act = swish(up) * gate (gate_idx has no effect on GEMM3)"},
    {LoopMutation::hidden_subnormals_flushed, "hidden_subnormals_flushed",
     "f16/bf16 hidden states that are subnormal in the data type read as zero, as a kernel under FTZ/DAZ or an f16 to f32 conversion that flushes"},
    {LoopMutation::negative_weight_routes_skipped, "negative_weight_routes_skipped",
     "routes whose routing weight is negative are skipped, as a kernel that takes a weight > 0 to mean a live route"},
    {LoopMutation::zero_point_sign_flipped, "zero_point_sign_flipped",
     "compressed weights: the zero point added instead of subtracted, (W + Z) * S"},
    {LoopMutation::nibble_order_swapped, "nibble_order_swapped",
     "compressed weights: 4-bit element 2i read from the high nibble, 2i + 1 from the low one"},
    {LoopMutation::next_group_scale, "next_group_scale",
     "compressed weights: each group dequantised with the scale and zero point of the next group"},
    {LoopMutation::channel_scale_for_groups, "channel_scale_for_groups",
     "compressed weights: grouped scales read as per-channel, group 0's scale applied to every group"},
    {LoopMutation::e8m0_bias_off_by_one, "e8m0_bias_off_by_one",
     "compressed weights: MXFP4's E8M0 scale decoded with bias 126 instead of 127"},
    {LoopMutation::fp8_subnormals_flushed, "fp8_subnormals_flushed",
     "compressed weights: FP8 codes with a zero exponent field (the subnormals) read as zero"},
    {LoopMutation::e4m3_nan_as_number, "e4m3_nan_as_number",
     "compressed weights: the E4M3 NaN code S.1111.111 read as +-480, as if the type had no NaN"},
    {LoopMutation::odd_group_scale_dropped, "odd_group_scale_dropped",
     "compressed weights: with an odd number of groups, the last group's scale read as 1, as a kernel that loads group scales in pairs"},
    {LoopMutation::e5m2_inf_saturated, "e5m2_inf_saturated",
     "compressed weights: the E5M2 infinity codes read as +-57344, as a decoder that saturates to the largest finite value"},
    {LoopMutation::e5m2_nan_as_inf, "e5m2_nan_as_inf",
     "compressed weights: the E5M2 NaN codes read as +-infinity, as a decoder that tests only the exponent field"},
    {LoopMutation::e8m0_zero_code_flushed, "e8m0_zero_code_flushed",
     "compressed weights: the E8M0 scale code 0 (2^-127) read as 0, as a decoder that builds the f32 bits code << 23"},
    {LoopMutation::e4m3_negative_nan_as_number, "e4m3_negative_nan_as_number",
     "compressed weights: only the E4M3 code 0x7F taken for NaN, 0xFF read as -480, as a decoder that compares the whole byte"},
    {LoopMutation::swish_exp_overflow, "swish_exp_overflow",
     "swish computed as x e^(beta x) / (1 + e^(beta x)) in f32: inf / inf = NaN once beta x > 88.7"},
    {LoopMutation::expert_tail_rows_dropped, "expert_tail_rows_dropped",
     "an expert with more than 64 rows loses the rows of its partial last 64-row tile, as a grouped GEMM that launches the tail tile only for a single-tile expert"},
    {LoopMutation::experts_from_128_ignored, "experts_from_128_ignored",
     "experts with id 128 or above contribute nothing, as a kernel with a fixed 128-entry expert table (DeepSeek-V3 has 256)"},
    {LoopMutation::u4_zero_point_sign_extended, "u4_zero_point_sign_extended",
     "compressed weights: u4 zero points sign-extended, codes 8..15 read as -8..-1, as an i4 nibble extract does"},
    {LoopMutation::row_scale_read_per_tensor, "row_scale_read_per_tensor",
     "compressed weights: a scale of one row per expert [E, 1, G] with G > 1 read as per tensor, group 0's for every group"},
    {LoopMutation::u4_scales_read_as_f16, "u4_scales_read_as_f16",
     "compressed weights: u4 scales read as f16 whatever their type (bf16 bits decoded as f16, f32 read as pairs of halves)"},
    {LoopMutation::group_size_from_weight_0, "group_size_from_weight_0",
     "compressed weights: every weight's group index computed with weight_0's group size, as a kernel that takes one group size per layer"},
    {LoopMutation::lowp_intermediates_truncated, "lowp_intermediates_truncated",
     "loop_lowp whose stored f16/bf16 intermediates (gate_up or gate and up, act, down) are truncated instead of rounded to nearest even; the output is rounded correctly"},
};

// Everything one run needs: sizes, the arithmetic parameters as this backend (mutation included)
// reads them, and every input but the GEMM weights widened once to float. The weights are read
// one expert at a time (ExpertWeights): a model-sized case holds 128 experts of which a few
// tokens use a handful, and widening all of them cost 5 GB and half a minute.
struct Setup {
    Dims d;
    bool gemm2 = true;
    float beta = 1.0f, limit = 0.0f;
    int gate_lane = 0;
    bool nk = true;
    bool compact_routing = true;
    DType storage = DType::f32;
    bool truncate = false;  // stored intermediates truncated, not rounded (both truncating mutants)
    bool truncate_output = false;  // ... and the output's conversion too (lowp_output_truncated)
    bool tf32 = false;      // GEMM inputs rounded to TF32 (tf32_gemm_inputs)
    bool reverse = false;   // dot products in reverse index order (a correct variant)
    std::set<std::string> kept;  // stages kept in f32 whatever the storage (a correct variant)
    LoopMutation m = LoopMutation::none;
    DType dequant = DType::f32;  // the type compressed weights are dequantised to
    std::vector<float> x, routing, b0, b1;  // b0/b1 empty when absent or dropped

    bool mutated(LoopMutation which) const { return m == which; }
};

// f64 inputs are rounded to f32 here: the real input rounding of an f32 backend. f16/bf16/f32
// widen exactly.
std::vector<float> widen(const Tensor& t) {
    const std::vector<double> wide = t.to_f64();
    std::vector<float> out(wide.size());
    for (std::size_t i = 0; i < wide.size(); ++i) out[i] = static_cast<float>(wide[i]);
    return out;
}

std::vector<float> widen_optional(const Problem& p, const char* name, bool dropped) {
    return p.has(name) && !dropped ? widen(p.input(name)) : std::vector<float>{};
}

DequantBug dequant_bug(LoopMutation m) {
    switch (m) {
        case LoopMutation::zero_point_sign_flipped: return DequantBug::zero_point_sign;
        case LoopMutation::nibble_order_swapped: return DequantBug::nibble_order;
        case LoopMutation::next_group_scale: return DequantBug::next_group_scale;
        case LoopMutation::channel_scale_for_groups: return DequantBug::first_group_scale;
        case LoopMutation::e8m0_bias_off_by_one: return DequantBug::e8m0_bias;
        case LoopMutation::fp8_subnormals_flushed: return DequantBug::fp8_subnormals;
        case LoopMutation::e4m3_nan_as_number: return DequantBug::e4m3_nan;
        case LoopMutation::odd_group_scale_dropped: return DequantBug::odd_last_scale;
        case LoopMutation::e5m2_inf_saturated: return DequantBug::e5m2_inf;
        case LoopMutation::e5m2_nan_as_inf: return DequantBug::e5m2_nan;
        case LoopMutation::e8m0_zero_code_flushed: return DequantBug::e8m0_zero;
        case LoopMutation::e4m3_negative_nan_as_number: return DequantBug::e4m3_negative_nan;
        case LoopMutation::u4_zero_point_sign_extended: return DequantBug::u4_zero_point_signed;
        case LoopMutation::row_scale_read_per_tensor: return DequantBug::row_scale_per_tensor;
        case LoopMutation::u4_scales_read_as_f16: return DequantBug::u4_scales_as_f16;
        case LoopMutation::group_size_from_weight_0: return DequantBug::weight_0_group_size;
        default: return DequantBug::none;
    }
}

// Expert e of a weight as floats: widened (f64 rounded to f32, the narrower types exactly, as
// widen() does), or (compressed) dequantised and rounded once to `dequant`.
std::vector<float> expert_weight(const Problem& p, const char* name, std::size_t e, DType dequant, LoopMutation m) {
    const Tensor& w = p.input(name);
    const std::size_t n = w.shape()[1] * w.shape()[2], base = e * n;
    std::vector<float> out(n);
    if (!is_floating(w.dtype())) {
        loop_dequantize_expert(p, name, e, dequant, dequant_bug(m), out.data());
    } else if (w.dtype() == DType::f32) {
        std::memcpy(out.data(), w.data() + base * sizeof(float), n * sizeof(float));  // f32 to f32: a copy
    } else {
        // Through f64 in cache-sized pieces, not a whole f64 copy of the expert.
        double chunk[4096];
        for (std::size_t i = 0; i < n; i += 4096) {
            const std::size_t count = std::min<std::size_t>(4096, n - i);
            w.to_f64(base + i, count, chunk);
            for (std::size_t j = 0; j < count; ++j) out[i + j] = static_cast<float>(chunk[j]);
        }
    }
    return out;
}

// The GEMM weights of one expert, as this backend (mutation included) reads them.
struct ExpertWeights {
    std::vector<float> w0, w1, w2;  // w2 empty for GEMM2
};

ExpertWeights load_expert(const Problem& p, const Setup& s, std::size_t e) {
    ExpertWeights w;
    w.w0 = expert_weight(p, kWeight0, e, s.dequant, s.m);
    w.w1 = expert_weight(p, kWeight1, e, s.dequant, s.m);
    if (!s.gemm2) w.w2 = expert_weight(p, kWeight2, e, s.dequant, s.m);
    // The GEMM3 mutant takes gate_idx 1 to mean that weight_1 is the gate projection.
    if (s.mutated(LoopMutation::gemm3_gate_idx_swapped) && !s.gemm2 && p.attributes.gate_idx.value_or(0) == 1)
        std::swap(w.w0, w.w1);
    if (s.mutated(LoopMutation::subnormal_gemm_weights_flushed)) {
        const DType data = p.input(kHiddenStates).dtype();
        for (auto* v : {&w.w0, &w.w1, &w.w2})
            for (float& x : *v)
                if (lowp::is_subnormal_in(data, x)) x = 0.0f;
    }
    return w;
}

// One addition of a running sum; the f16_accumulation mutant rounds every partial sum to f16.
float add(float sum, float term, bool f16) {
    const float s = sum + term;
    return f16 ? static_cast<float>(round_to(DType::f16, s)) : s;
}

// Keeps an intermediate of `stage` between stages in the declared storage type (a no-op for f32
// storage, and for a stage the variant keeps in f32).
float store(const Setup& s, const char* stage, float v) {
    if (s.storage == DType::f32 || s.kept.count(stage)) return v;
    return static_cast<float>(s.truncate ? lowp::truncate_to(s.storage, v) : round_to(s.storage, v));
}

// y = W[e] x (+ b[e]) for one expert, W[e] (`we`) of `rows` outputs by `cols` inputs laid out NK
// ([rows, cols]) or KN ([cols, rows]). Each dot product runs in float in index order over the
// first `used` inputs (hidden_off_by_one shortens it); the bias is added after the sum; each
// result is then stored in the storage type as stage `stage`.
std::vector<float> gemv(const Setup& s, const char* stage, const float* we, const std::vector<float>& bias, std::size_t e,
                        std::size_t rows, std::size_t cols, const float* in, std::size_t used) {
    const bool f16 = s.mutated(LoopMutation::f16_accumulation);
    std::vector<float> y(rows);
    for (std::size_t n = 0; n < rows; ++n) {
        float sum = 0.0f;
        for (std::size_t i = 0; i < used; ++i) {
            const std::size_t k = s.reverse ? used - 1 - i : i;
            float a = s.nk ? we[n * cols + k] : we[k * rows + n], b = in[k];
            if (s.tf32) a = lowp::to_tf32(a), b = lowp::to_tf32(b);
            sum = add(sum, a * b, f16);
        }
        if (!bias.empty()) sum += bias[e * rows + n];  // [E, 1, N] and [E, N] share the flat layout
        y[n] = store(s, stage, sum);
    }
    return y;
}

// Both written so that a NaN argument comes back unchanged (every comparison with NaN is false).
float minimum(float x, float limit) { return x > limit ? limit : x; }
float clamp(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }
float swish(float x, float beta, bool exp_overflow = false) {
    if (exp_overflow) {  // the algebraically equal form whose e^(beta x) overflows first
        const float e = std::exp(beta * x);
        return x * e / (1.0f + e);
    }
    return x / (1.0f + std::exp(-beta * x));
}

// GEMM2: act_j = (clamp(lin_j, -L, L) + 1) * swish(min(gate_j, L); beta).
std::vector<float> gemm2_act(const Setup& s, const std::vector<float>& gate_up) {
    const int g = s.mutated(LoopMutation::lanes_swapped) ? 1 - s.gate_lane : s.gate_lane;
    std::vector<float> act(s.d.I);
    for (std::size_t j = 0; j < s.d.I; ++j) {
        const float gate = gate_up[2 * j + static_cast<std::size_t>(g)];
        const float lin = gate_up[2 * j + 1 - static_cast<std::size_t>(g)];
        const float clamped = s.mutated(LoopMutation::clamp_lower_dropped) ? minimum(lin, s.limit)
                              : s.mutated(LoopMutation::clamp_nan_dropped) ? std::max(-s.limit, std::min(lin, s.limit))
                                                                           : clamp(lin, -s.limit, s.limit);
        const float linear = s.mutated(LoopMutation::plus_one_dropped) ? clamped : clamped + 1.0f;
        const float capped = s.mutated(LoopMutation::minimum_dropped)   ? gate
                             : s.mutated(LoopMutation::gate_nan_capped) ? std::fmin(gate, s.limit)
                                                                        : minimum(gate, s.limit);
        act[j] = store(s, "act", linear * swish(capped, s.beta, s.mutated(LoopMutation::swish_exp_overflow)));
    }
    return act;
}

// GEMM3: act_j = swish(gate_j; beta) * up_j.
std::vector<float> gemm3_act(const Setup& s, const std::vector<float>& gate, const std::vector<float>& up) {
    std::vector<float> act(s.d.I);
    for (std::size_t j = 0; j < s.d.I; ++j) {
        const float sw = swish(gate[j], s.beta, s.mutated(LoopMutation::swish_exp_overflow));
        act[j] = store(s, "act", s.mutated(LoopMutation::gemm3_up_ignored) ? sw : sw * up[j]);
    }
    return act;
}

// The intermediates of one (token, slot) pair, in pipeline order, named as in the golden files.
using PairStages = std::vector<std::pair<const char*, std::vector<float>>>;

// One expert (e, its weights w) on one token. The last entry is "down" (bias_1 included, routing
// weight not).
PairStages run_expert(const Setup& s, std::size_t e, const ExpertWeights& w, const float* x) {
    const Dims& d = s.d;
    const std::size_t used = s.mutated(LoopMutation::hidden_off_by_one) ? d.H - 1 : d.H;
    if (s.gemm2) {
        auto gate_up = gemv(s, "gate_up", w.w0.data(), s.b0, e, 2 * d.I, d.H, x, used);
        auto act = gemm2_act(s, gate_up);
        // bias1_after_routing adds bias_1 after the routing sum instead (add_bias_after_routing).
        auto down = gemv(s, "down", w.w1.data(), s.mutated(LoopMutation::bias1_after_routing) ? std::vector<float>{} : s.b1, e,
                         d.H, d.I, act.data(), d.I);
        return {{"gate_up", std::move(gate_up)}, {"act", std::move(act)}, {"down", std::move(down)}};
    }
    const std::vector<float> none;
    auto gate = gemv(s, "gate", w.w0.data(), none, e, d.I, d.H, x, used);
    auto up = gemv(s, "up", w.w1.data(), none, e, d.I, d.H, x, d.H);
    auto act = gemm3_act(s, gate, up);
    auto down = gemv(s, "down", w.w2.data(), none, e, d.H, d.I, act.data(), d.I);
    return {{"gate", std::move(gate)}, {"up", std::move(up)}, {"act", std::move(act)}, {"down", std::move(down)}};
}

// Routing weight of (token t, slot k) whose expert is e, in either layout.
float routing_weight(const Setup& s, std::size_t t, std::size_t k, std::size_t e) {
    return s.compact_routing ? s.routing[t * s.d.K + k] : s.routing[e * s.d.T + t];
}

// The bias1_after_routing mutant: bias_1 enters once per token, after the routing sum, with the
// weights renormalised to sum 1. It equals the op only when the token's weights already do.
void add_bias_after_routing(const Setup& s, const std::vector<float>& w, const std::vector<std::size_t>& experts,
                            float* row) {
    float sum = 0.0f;
    for (float v : w) sum += v;
    if (s.b1.empty() || sum == 0.0f) return;
    for (std::size_t k = 0; k < w.size(); ++k)
        for (std::size_t h = 0; h < s.d.H; ++h) row[h] += w[k] / sum * s.b1[experts[k] * s.d.H + h];
}

}  // namespace

LoopBackend::LoopBackend(LoopOptions options) : options_(options) {}

std::string LoopBackend::name() const {
    std::string plain = options_.store_in_data_type ? "loop_lowp" : "loop_f32";
    if (options_.skip_weight_at_most >= 0.0) plain += "_skipping";
    if (options_.reverse_order) plain += "_reversed";
    for (const auto& stage : options_.stages_kept_in_f32) plain += "_" + stage + "_f32";
    return mutant_or_plain_name(kLoopMutations, options_.mutation, plain);
}

std::string LoopBackend::description() const {
    if (const auto* m = find_mutation(kLoopMutations, options_.mutation)) return m->description;
    return options_.store_in_data_type
               ? "plain f32 loops, K slots summed in slot order, f16/bf16 intermediates (and dequantised weights) in the data type"
               : "plain f32 loops, K slots summed in slot order, intermediates kept in f32";
}

Support LoopBackend::supports(const Problem&) const { return {}; }

Precision LoopBackend::precision(DType data_type) const {
    Precision p;  // compute f32 always: the f16_accumulation mutant's declaration is its bug
    // Only f16/bf16 storage lowers anything below f32; f64 data still keeps f32 intermediates.
    // It dequantises compressed weights in the same type (one rounding of W_f, spec/tolerance.md).
    if (options_.store_in_data_type && (data_type == DType::f16 || data_type == DType::bf16)) {
        p.storage = data_type;
        p.dequant = data_type;
    }
    return p;
}

Output LoopBackend::run(const Problem& p, bool want_stages) {
    Setup s;
    s.d = validate(p);
    const ResolvedParams rp = resolve(p.attributes);
    const Dims& d = s.d;
    const LoopMutation m = options_.mutation;
    s.m = m;
    s.gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    s.beta = static_cast<float>(rp.swish_beta);
    s.limit = static_cast<float>(rp.clamp_limit);
    if (m == LoopMutation::alpha_beta_swapped) {  // GEMM3 has no clamp: only its beta changes (to 0)
        s.beta = static_cast<float>(rp.clamp_limit);
        s.limit = static_cast<float>(rp.swish_beta);
    }
    if (m == LoopMutation::swish_beta_one) s.beta = 1.0f;
    if (m == LoopMutation::zero_limit_unclamped && s.limit == 0.0f) s.limit = INFINITY;
    s.gate_lane = rp.gate_lane;
    s.nk = rp.weight_layout == WeightLayout::NK;
    s.compact_routing = rp.routing_layout == RoutingLayout::compact;
    const Tensor& hidden = p.input(kHiddenStates);
    s.storage = precision(hidden.dtype()).storage;
    s.truncate_output = m == LoopMutation::lowp_output_truncated;
    s.truncate = s.truncate_output || m == LoopMutation::lowp_intermediates_truncated;
    s.tf32 = m == LoopMutation::tf32_gemm_inputs;
    s.reverse = options_.reverse_order;
    s.kept = options_.stages_kept_in_f32;

    s.x = widen(hidden);
    if (m == LoopMutation::hidden_subnormals_flushed && (hidden.dtype() == DType::f16 || hidden.dtype() == DType::bf16))
        for (float& v : s.x)
            if (lowp::is_subnormal_in(hidden.dtype(), v)) v = 0.0f;
    s.routing = widen(p.input(kRoutingWeights));
    s.dequant = precision(hidden.dtype()).dequant_type();
    s.b0 = widen_optional(p, kBias0, m == LoopMutation::bias0_dropped);
    s.b1 = widen_optional(p, kBias1, m == LoopMutation::bias1_dropped);
    const Tensor& idx = p.input(kTopkIndices);

    const bool f16 = m == LoopMutation::f16_accumulation;
    // The mutant skips small routes; the correct variant only those of weight (at most) zero.
    auto skip_route = [&](float w) {
        if (m == LoopMutation::small_weight_routes_skipped) return std::fabs(w) < 1e-4f;
        return options_.skip_weight_at_most >= 0.0 && std::fabs(w) <= options_.skip_weight_at_most;
    };
    // Every (token, slot) pair's expert output, computed expert by expert so that one expert's
    // weights are held at a time; the pairs are independent, so the order changes no value.
    std::vector<std::vector<std::size_t>> pairs_of(d.E);  // expert -> its pairs t * K + k
    for (std::size_t i = 0; i < d.T * d.K; ++i) pairs_of[static_cast<std::size_t>(idx.get_index(i))].push_back(i);
    std::vector<float> pair_down(d.T * d.K * d.H);  // "down" of pair i at i * H
    std::map<std::string, std::vector<float>> stages;  // name -> [T, K, width]
    for (std::size_t e = 0; e < d.E; ++e) {
        if (pairs_of[e].empty()) continue;
        const ExpertWeights w = load_expert(p, s, e);
        // expert_tail_rows_dropped: past one 64-row tile, the pairs of the partial last tile (in
        // token order) are never computed, their "down" left zero.
        const std::size_t rows = pairs_of[e].size();
        const std::size_t computed =
            m == LoopMutation::expert_tail_rows_dropped && rows > 64 && rows % 64 ? rows / 64 * 64 : rows;
        for (std::size_t r = 0; r < computed; ++r) {
            const std::size_t i = pairs_of[e][r];
            const PairStages pair = run_expert(s, e, w, s.x.data() + i / d.K * d.H);
            if (want_stages) {
                for (const auto& [name, v] : pair) {
                    auto& buf = stages[name];
                    buf.resize(d.T * d.K * v.size());
                    std::copy(v.begin(), v.end(), buf.begin() + static_cast<std::ptrdiff_t>(i * v.size()));
                }
            }
            const std::vector<float>& down = pair.back().second;
            std::copy(down.begin(), down.end(), pair_down.begin() + static_cast<std::ptrdiff_t>(i * d.H));
        }
    }

    std::vector<float> out(d.T * d.H, 0.0f);
    for (std::size_t t = 0; t < d.T; ++t) {
        float* row = out.data() + t * d.H;
        std::vector<float> used_w;  // bias1_after_routing: the weights and experts of the token
        std::vector<std::size_t> used_e;
        for (std::size_t slot = 0; slot < d.K; ++slot) {
            const std::size_t k = s.reverse ? d.K - 1 - slot : slot;
            const auto e = static_cast<std::size_t>(idx.get_index(t * d.K + k));
            if (m == LoopMutation::last_expert_ignored && e == d.E - 1) continue;
            if (m == LoopMutation::topk_capped_at_4 && k >= 4) continue;
            if (m == LoopMutation::experts_from_32_ignored && e >= 32) continue;
            if (m == LoopMutation::experts_from_128_ignored && e >= 128) continue;
            // The mutant takes the weight of the next slot, read with that slot's own expert.
            const std::size_t wk = m == LoopMutation::routing_slot_shifted ? (k + 1) % d.K : k;
            float w = routing_weight(s, t, wk, static_cast<std::size_t>(idx.get_index(t * d.K + wk)));
            if (m == LoopMutation::subnormal_weights_flushed && lowp::is_subnormal_in(hidden.dtype(), w)) w = 0.0f;
            if (m == LoopMutation::negative_weight_routes_skipped && w < 0.0f) continue;
            if (skip_route(w)) continue;
            used_w.push_back(w);
            used_e.push_back(e);
            const float* down = pair_down.data() + (t * d.K + k) * d.H;
            for (std::size_t h = 0; h < d.H; ++h) row[h] = add(row[h], w * down[h], f16);
        }
        if (m == LoopMutation::bias1_after_routing) add_bias_after_routing(s, used_w, used_e, row);
    }
    if (m == LoopMutation::token_output_to_neighbour && d.T >= 2) {
        for (std::size_t h = 0; h < d.H; ++h) {
            out[d.H + h] += out[h];
            out[h] = 0.0f;
        }
    }

    // The op's output has the type of hidden_states: the float sums rounded to it once (or, by
    // the truncating mutant, cut).
    std::vector<double> wide(out.begin(), out.end());
    if (s.truncate_output && (hidden.dtype() == DType::f16 || hidden.dtype() == DType::bf16))
        for (double& v : wide) v = lowp::truncate_to(hidden.dtype(), v);
    Output result;
    result.output = Tensor::from_f64(hidden.dtype(), hidden.shape(), wide);
    if (want_stages) {
        const std::vector<std::pair<const char*, std::size_t>> layout =
            s.gemm2 ? std::vector<std::pair<const char*, std::size_t>>{{"gate_up", 2 * d.I}, {"act", d.I}, {"down", d.H}}
                    : std::vector<std::pair<const char*, std::size_t>>{
                          {"gate", d.I}, {"up", d.I}, {"act", d.I}, {"down", d.H}};
        for (const auto& [name, width] : layout) {
            std::vector<float>& buf = stages[name];
            buf.resize(d.T * d.K * width);  // T = 0 still gets its [0, K, width] tensor
            result.stages.emplace(name, Tensor::from_f64(DType::f32, {d.T, d.K, width},
                                                         std::vector<double>(buf.begin(), buf.end())));
        }
    }
    return result;
}

std::vector<Mutant> loop_mutants() {
    return mutants_from_table<LoopMutation>(kLoopMutations, "loop", [](LoopMutation m) {
        // The truncating mutants are loop_lowp: their declared f16/bf16 storage widens their bound.
        const bool lowp = m == LoopMutation::lowp_output_truncated || m == LoopMutation::lowp_intermediates_truncated;
        return std::make_unique<LoopBackend>(LoopOptions{lowp, m});
    });
}

}  // namespace moe::backends
