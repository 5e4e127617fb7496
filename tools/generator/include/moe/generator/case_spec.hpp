#pragma once
// A catalogue case: everything needed to synthesise one golden file, declared as data
// (conformance/catalog/*.json; the format is in spec/catalog-format.md).
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "moe/generator/routers.hpp"
#include "moe/spec/problem.hpp"

namespace moe::generator {

// How one input's values are drawn. Values are drawn in f64 and rounded once to the case type.
struct Fill {
    enum class Kind { uniform, normal, dyadic, constant, log_uniform };
    Kind kind = Kind::uniform;
    double scale = 1.0;     // uniform: [-scale, scale); normal: standard deviation
    std::int64_t range = 0; // dyadic: integers in [-range, range] ...
    int bits = 0;           // ... times 2^-bits
    double value = 0.0;     // constant
    int min_exp = 0, max_exp = 0;  // log_uniform: +-m 2^e, m in [1, 2), e an integer in [min_exp, max_exp]
};

struct RoutingSpec {
    enum class Weights { softmax, random, dyadic, wide };
    std::vector<std::size_t> exclude;  // experts no token selects
    std::vector<std::size_t> always;   // experts every token selects
    double skew = 0.0;                 // Zipf exponent s: expert e drawn with weight 1/(e+1)^s (0: uniform)
    Weights weights = Weights::softmax;
    // Router front-end (routers.hpp): none = the random draw above; otherwise logits [T, E] are
    // drawn (stream "router_logits", normal with standard deviation logit_scale) and routed.
    RouterKind router = RouterKind::none;
    std::size_t n_group = 1, topk_group = 1;  // group_limited
    bool normalize = true;                    // softmax_topk, sigmoid_bias, group_limited
    double logit_scale = 1.0;
    double bias_scale = 0.0;                  // per-expert bias uniform in [-bias_scale, bias_scale)
    bool balanced = false;                    // every expert gets exactly T*K/E pairs
    std::optional<std::size_t> shared_expert; // every token's slot 0, weight 1
    double capacity_factor = 0.0;             // > 0: at most ceil(c*T*K/E) pairs per expert

    // Whether the case uses any of router / balanced / shared_expert / capacity_factor.
    bool extended() const {
        return router != RouterKind::none || balanced || shared_expert.has_value() || capacity_factor > 0.0;
    }
};

// A value written into one element of an input after filling (NaN/Inf propagation cases).
struct Override {
    std::string input;
    std::vector<std::size_t> index;
    double value = 0.0;
};

// Compressed expert weights (spec/compressed.md, spec/catalog-format.md "Compressed weights").
struct CompressionSpec {
    enum class ZeroPoint { none, weight_type, f16 };
    enum class ScaleLayout { ENG, ENG1, E1G };  // [E, N, G], [E, N, G, 1], [E, 1, G] (one row for all N)
    DType type = DType::u4;
    std::size_t group_size = 0;  // 0: per channel (G = 1); f4e2m1: 32
    // The catalogue's object form {"weight_0": 4, "weight_2": 8}: a group size for each compressed
    // weight (the op lets each weight have its own scale shape, spec/compressed.md); empty: every
    // weight takes group_size.
    std::map<std::string, std::size_t> group_sizes;
    DType scale_dtype = DType::f16;
    ZeroPoint zero_point = ZeroPoint::none;
    ScaleLayout scale_layout = ScaleLayout::ENG;
    // FP8 codes: over twelve binades up to the type's largest value (wide), or in the four
    // binades at the bottom of its range, subnormals included (bottom; spec/catalog-format.md).
    bool fp8_bottom = false;
    std::vector<std::string> weights;  // the compressed weights; empty: all of the case's
    bool compresses(const std::string& weight) const;
    std::size_t group_size_of(const std::string& weight) const;  // 0: per channel
};

struct CaseSpec {
    std::string name;
    std::string tier = "ci";  // quick | ci | full
    std::string description;
    OpAttributes attributes;
    // Shape. rank3: hidden [batch, seq, hidden]; otherwise [tokens, hidden].
    bool rank3 = false;
    std::size_t batch = 1, seq = 0, hidden = 0, inter = 0, experts = 0, topk = 0;
    bool indices_bsk = false;  // indices (and compact routing) as [B, S, K] instead of [T, K]
    DType dtype = DType::f32;
    DType index_dtype = DType::i32;
    bool bias_0 = true, bias_1 = true;  // GEMM2 only
    bool bias_rank2 = false;            // biases as [E, N] instead of [E, 1, N]
    std::uint64_t seed = 0;
    std::map<std::string, Fill> fills;  // by input name; absent -> default_fill()
    RoutingSpec routing;
    std::vector<Override> overrides;
    bool exact = false;       // exact by construction: the generator certifies it
    DType exact_storage = DType::f32;  // ... and that every stored intermediate is a value of this type
    // ... or (a storage-rounding case, f16 or bf16) that some stored intermediates are not, and
    // that rounding them to this type cannot change the output (moe/reference/storage_rounding.hpp)
    DType rounded_storage = DType::f32;
    bool kink_guard = true;   // GEMM2: redraw tokens whose pre-activations sit on a clamp edge
    std::optional<CompressionSpec> compression;  // absent: every weight in the data type

    std::size_t tokens() const { return batch * seq; }
};

// The fill an input gets when the case does not give one: O(1) activations whatever the sizes.
Fill default_fill(const CaseSpec& c, const std::string& input);

// Bytes generating the case holds at its peak, roughly (an upper bound for the bundled cases):
// what build_golden() and the reference allocate for it. In double, so that sizes whose
// product passes 2^64 give a huge need rather than a wrapped small one.
double generation_bytes(const CaseSpec& c, bool stages);

// Reads a catalogue file and expands it into cases. Throws InputError naming the file, the case
// and the key at fault.
std::vector<CaseSpec> load_catalog(const std::filesystem::path& file);

}  // namespace moe::generator
