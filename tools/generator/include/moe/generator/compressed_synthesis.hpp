#pragma once
// Drawing compressed expert weights (spec/compressed.md; spec/catalog-format.md, "Compressed
// weights"): the stored codes, the group scales and the zero points of one weight.
#include <string>

#include "moe/generator/case_spec.hpp"
#include "moe/spec/problem.hpp"

namespace moe::generator {

// Draws weight `name` of shape [E, N, K] compressed as `c.compression` says, with dequantised
// values of magnitude about `magnitude` (the weight's fill scale), and stores the weight, its
// scale and its zero point in p. Exact cases get powers-of-two scales (and FP8 codes that are
// small integers), so that every dequantised value is dyadic. Throws InputError (naming the case)
// when the group size does not divide K.
void synthesize_compressed_weight(Problem& p, const CaseSpec& c, const std::string& name, std::size_t E, std::size_t N,
                                  std::size_t K, double magnitude);

}  // namespace moe::generator
