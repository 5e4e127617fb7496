#pragma once
// The edits a shrinker makes to a problem, each keeping it a valid MOE problem of the same
// expert type, convention and layouts: keep a subset of the tokens, the top-k slots, the experts,
// the hidden or the intermediate features; drop the optional biases; flatten [B, S, H] hidden
// states to [T, H]; set input elements to zero or to powers of two. Every index list is in
// ascending order and names positions of the current problem.
#include <cstddef>
#include <string>
#include <vector>

#include "moe/spec/problem.hpp"

namespace moe::shrink {

using Keep = std::vector<std::size_t>;

// The tensor with only the positions `keep` along `axis`.
Tensor select_axis(const Tensor& t, std::size_t axis, const Keep& keep);

// Tokens (flattened B*S order). [B, S, H] hidden states become [1, T', H].
Problem keep_tokens(const Problem& p, const Keep& tokens);
// Top-k slots, for every token (dense routing: the dropped routes' weights become 0).
Problem keep_slots(const Problem& p, const Keep& slots);
// Experts; every expert a token selects must be kept (indices are renumbered).
Problem keep_experts(const Problem& p, const Keep& experts);
// The experts some token selects, in ascending id.
Keep used_experts(const Problem& p);
// Hidden features: hidden_states' columns, the first GEMM's inputs, the down GEMM's outputs.
// Where those inputs are a compressed weight's, only whole groups of them (the problem
// unchanged when `features` splits one).
Problem keep_hidden(const Problem& p, const Keep& features);
// Intermediate features j: GEMM2's gate_up lanes 2j and 2j+1 (and bias_0's), GEMM3's gate and
// up rows, the down GEMM's inputs (whole groups of them, as for keep_hidden).
Problem keep_inter(const Problem& p, const Keep& features);
// How many consecutive hidden (intermediate) features keep_hidden (keep_inter) keeps or drops
// together: 1, a compressed weight's group, 2 for a 4-bit one per channel (K stays even), or
// all of them when no unit fits (an MXFP4 weight per channel is one block of 32).
std::size_t hidden_unit(const Problem& p);
std::size_t inter_unit(const Problem& p);
// Without bias_0 / bias_1 (GEMM2; both optional).
Problem drop_input(const Problem& p, const char* name);
// [B, S, H] hidden states (and [B, S, K] indices, routing) as [T, H] ([T, K]).
Problem flatten_tokens(const Problem& p);

// The input's elements at `flat` set to 0.
Problem zero_elements(const Problem& p, const char* input, const Keep& flat);
// Every finite non-zero element of the input replaced by the power of two nearest to it (same
// sign); zeros and non-finite values stay.
Problem powers_of_two(const Problem& p, const char* input);
// Flat positions of the input's non-zero elements.
Keep nonzero_elements(const Problem& p, const char* input);

// The sizes and the number of non-zero input values: what a shrink makes smaller.
struct ProblemSize {
    std::size_t T = 0, K = 0, E = 0, H = 0, I = 0, nonzero_values = 0;
    std::string to_string() const;  // "T 9, K 2, E 6, H 32, I 16, 3210 non-zero input values"
};
ProblemSize problem_size(const Problem& p);

}  // namespace moe::shrink
