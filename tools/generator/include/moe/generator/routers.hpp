#pragma once
// Router front-ends: from router logits [T, E] (f64, row-major) to the op's routing inputs,
// indices [T, K] and weights [T, K]. Four families, as real MoE models route:
//
//   softmax_topk   softmax over all E -> top-K -> (normalize) divide by the sum of the K
//                  selected probabilities (Qwen3, Mixtral; normalize_top_k_affinities).
//   topk_softmax   top-K of (logit + bias) -> softmax over the K selected (logit + bias)
//                  (GPT-OSS: the bias is the router's linear-layer bias, so it enters the
//                  weights too). The weights always sum to 1; `normalize` does not apply.
//   sigmoid_bias   s = sigmoid(logit); top-K of (s + bias) -> weights s (the unbiased
//                  sigmoids: the bias steers selection only), divided by (sum of the K
//                  selected s + eps) when normalize (DeepSeek-V3's e_score_correction_bias).
//   group_limited  as sigmoid_bias, but first the E experts are cut into n_group equal groups
//                  of consecutive ids (group g = experts [g*E/n_group, (g+1)*E/n_group)); a
//                  group's score is the SUM OF ITS TWO BEST (s + bias) (DeepSeek-V3; the best
//                  one alone when a group has one expert); the topk_group best groups are kept
//                  and top-K is taken among their experts only.
//
// Determinism: exp is moe::reference::exp_portable; sums run in ascending expert order (softmax)
// or in slot order (selected values). Ties: whenever two experts (or two groups) score the
// same, the LOWER id wins; the K slots are filled in descending selection score, ties by
// ascending id. NaN logits (or bias) are refused (InputError).
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace moe::generator {

enum class RouterKind { none, softmax_topk, topk_softmax, sigmoid_bias, group_limited };

const char* router_name(RouterKind k);
std::optional<RouterKind> parse_router(std::string_view name);

struct RouterConfig {
    RouterKind kind = RouterKind::softmax_topk;
    std::size_t topk = 1;
    bool normalize = true;            // softmax_topk, sigmoid_bias, group_limited
    std::size_t n_group = 1;          // group_limited
    std::size_t topk_group = 1;       // group_limited
    std::vector<double> bias;         // per expert (size E) or empty = 0; not for softmax_topk
    double eps = 1e-20;               // sigmoid_bias / group_limited normalization
};

struct RouterResult {
    std::size_t tokens = 0, topk = 0;
    std::vector<std::size_t> indices;  // [T, K]
    std::vector<double> weights;       // [T, K]
};

// Routes T tokens over E experts. Throws InputError on bad sizes or parameters.
RouterResult route(const std::vector<double>& logits, std::size_t T, std::size_t E, const RouterConfig& cfg);

// The k best of `candidates` by score (descending), ties by ascending id.
std::vector<std::size_t> top_k(const std::vector<double>& score, std::vector<std::size_t> candidates, std::size_t k);

// 1 / (1 + exp_portable(-x)).
double sigmoid_portable(double x);

}  // namespace moe::generator
