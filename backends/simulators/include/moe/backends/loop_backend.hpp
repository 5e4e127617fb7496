#pragma once
// `loop`: the operation in plain loops with f32 arithmetic, token by token and slot by slot,
// summing the K slots in slot order. Simple enough to trust by reading; a correct f32
// implementation to measure the tolerance against; and, with a LoopMutation, the deliberately broken
// variants that `moe-conform selftest` must catch.
#include <set>
#include <string>
#include <vector>

#include "moe/spec/backend.hpp"
#include "moe/spec/mutant.hpp"

namespace moe::backends {

enum class LoopMutation {
    none,
    lanes_swapped,             // GEMM2: gate and linear lanes exchanged
    alpha_beta_swapped,        // swish beta and clamp limit exchanged
    plus_one_dropped,          // GEMM2: (clamp(lin) + 1) becomes clamp(lin)
    clamp_lower_dropped,       // GEMM2: clamp(lin, -L, L) becomes min(lin, L)
    zero_limit_unclamped,      // GEMM2: a clamp limit of 0 read as "no clamp"
    clamp_nan_dropped,         // GEMM2: clamp(NaN, -L, L) = -L (max(-L, min(x, L)) with NaN-dropping max)
    gate_nan_capped,           // GEMM2: min(NaN, L) = L for the gate (fminf(x, L), std::min(L, x))
    minimum_dropped,           // GEMM2: min(gate, L) becomes gate
    bias0_dropped,             // GEMM2: bias_0 ignored
    bias1_dropped,             // GEMM2: bias_1 ignored
    swish_beta_one,            // swish beta taken as 1
    routing_slot_shifted,      // the weight of slot k applied to slot (k + 1) mod K
    last_expert_ignored,       // expert E - 1 contributes nothing
    token_output_to_neighbour, // token 0's output written to token 1 (token 0 left zero)
    gemm3_up_ignored,          // GEMM3: act = swish(gate), the seed text's literal pseudocode
    f16_accumulation,          // every GEMM sum rounded to f16 while declaring f32
    hidden_off_by_one,         // the first GEMM's sum stops at H - 1
    lowp_output_truncated,     // loop_lowp whose f16/bf16 conversions truncate instead of rounding
    small_weight_routes_skipped,  // routes whose weight is below 1e-4 in magnitude skipped
    subnormal_weights_flushed, // routing weights subnormal in the data type read as zero
    subnormal_gemm_weights_flushed,  // GEMM weights subnormal in the data type read as zero (DAZ)
    tf32_gemm_inputs,          // GEMM inputs rounded to TF32 (10-bit mantissa) while declaring f32
    bias1_after_routing,       // GEMM2: bias_1 added after the routing sum, weights renormalised
    topk_capped_at_4,          // only the first 4 top-k slots summed (a fixed 4-entry buffer)
    experts_from_32_ignored,   // experts with id >= 32 contribute nothing (a 32-bit expert mask)
    gemm3_gate_idx_swapped,    // GEMM3: gate_idx 1 read as weight_1 being the gate projection
    hidden_subnormals_flushed, // f16/bf16 hidden states subnormal in the data type read as zero (FTZ/DAZ)
    negative_weight_routes_skipped,  // routes whose routing weight is negative skipped
    // Compressed weights (spec/compressed.md): the dequantisation bugs kernels most often have.
    zero_point_sign_flipped,   // (W + Z) * S
    nibble_order_swapped,      // 4-bit: element 2i read from the high nibble
    next_group_scale,          // the scale and zero point of group (g + 1) mod G
    channel_scale_for_groups,  // grouped scales read as per-channel: group 0's for every group
    e8m0_bias_off_by_one,      // MXFP4: E8M0 scale 2^(code - 126)
    fp8_subnormals_flushed,    // FP8 subnormal codes read as zero
    e4m3_nan_as_number,        // the E4M3 NaN code read as +-480
    odd_group_scale_dropped,   // an odd number of groups: the last group's scale read as 1
    e5m2_inf_saturated,        // the E5M2 infinity codes read as +-57344, the type's largest finite
    e5m2_nan_as_inf,           // the E5M2 NaN codes read as +-infinity (the mantissa not looked at)
    e8m0_zero_code_flushed,    // the E8M0 scale code 0 (2^-127, an f32 subnormal) read as 0
    e4m3_negative_nan_as_number,  // E4M3: only 0x7F taken for NaN, 0xFF read as -480
    // The escapes of the second mutation hunt (each with the bundled case written for it).
    swish_exp_overflow,        // swish as x e^(bx) / (1 + e^(bx)) in f32: inf / inf = NaN once bx > 88.7
    expert_tail_rows_dropped,  // an expert with more than one 64-row tile loses the rows of its partial last tile
    experts_from_128_ignored,  // experts with id >= 128 contribute nothing (a fixed 128-entry expert table)
    u4_zero_point_sign_extended,  // u4 zero points read as i4 (codes 8..15 as -8..-1)
    row_scale_read_per_tensor,    // [E, 1, G] scales with G > 1 read as per tensor: [e, 0, 0] for every group
    u4_scales_read_as_f16,        // u4 weights: the scale tensor read as f16 whatever its type
    group_size_from_weight_0,     // every weight's group index k / GS taken with weight_0's GS
    // Caught by the storage-rounding cases (exact_*_rounding_*, spec/tolerance.md).
    lowp_intermediates_truncated,  // loop_lowp whose stored intermediates truncate; its output rounds correctly
};

// The loop mutants, in declaration order (every LoopMutation but none).
std::vector<Mutant> loop_mutants();

struct LoopOptions {
    // Round gate_up/gate/up, act and down to the problem's data type between stages, as GPU
    // kernels that keep f16 intermediates do (declared as storage = data type).
    bool store_in_data_type = false;
    LoopMutation mutation = LoopMutation::none;
    // Correct variants, legitimate choices the suite must accept (tests use them): skip the
    // routes whose |weight| <= skip_weight_at_most (0: exactly the zero-weight routes; negative:
    // none), and run every dot product and the routing sum in reverse index order.
    double skip_weight_at_most = -1.0;
    bool reverse_order = false;
    // A correct variant too: these stages ("gate_up", "gate", "up", "act", "down") kept in f32
    // although f16/bf16 storage is declared, as a fused kernel keeps what it never writes out
    // (the cpu backend keeps all but act). Names the mutants' truncation skips as well.
    std::set<std::string> stages_kept_in_f32{};
};

class LoopBackend : public Backend {
public:
    explicit LoopBackend(LoopOptions options = {});
    std::string name() const override;  // loop_f32, loop_lowp, or mutant:<mutation name>
    std::string description() const override;
    Support supports(const Problem& p) const override;
    Precision precision(DType data_type) const override;
    bool provides_stages() const override { return true; }
    Output run(const Problem& p, bool want_stages) override;

private:
    LoopOptions options_;
};

}  // namespace moe::backends
