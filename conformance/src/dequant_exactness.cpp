#include "dequant_exactness.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <unordered_set>
#include <vector>

#include "moe/spec/compression.hpp"

namespace moe::conformance {

namespace {

std::uint64_t bits_of(double v) {
    std::uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
}

}  // namespace

bool dequant_type_holds_weight(const Problem& p, const std::string& weight, DType d) {
    if (d == DType::f64) return true;  // W_f is exact in f64 (spec/compressed.md)
    const auto c = weight_compression(p, weight);
    const Tensor& s = p.input(scale_input(weight));
    const Tensor* z = c->zero_point ? &p.input(zero_point_input(weight)) : nullptr;
    const std::array<double, 256> table = code_values(c->weight);
    const std::size_t codes = dtype_bits(c->weight) == 4 ? 16 : 256;
    // Scales repeat (E8M0 has 255 values; a model's 25 million MXFP4 groups share them): each
    // (scale, zero point) pair is tried once. A pair that does not fit ends the scan, which for
    // f32 scales, or f16 and bf16 ones against a 16-bit D, is almost always the first.
    // An 8- or 16-bit scale without a zero point (MXFP4's E8M0, f16, bf16) is looked up by its
    // stored bits, a bitmap test rather than a hash per group.
    const std::size_t scale_bytes = dtype_bits(s.dtype()) / 8;
    std::vector<bool> seen_code(!z && scale_bytes <= 2 ? std::size_t{1} << (8 * scale_bytes) : 0);
    std::unordered_set<std::string> seen_pair;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (!seen_code.empty()) {
            std::size_t code = 0;
            std::memcpy(&code, s.data() + i * scale_bytes, scale_bytes);
            if (seen_code[code]) continue;
            seen_code[code] = true;
        }
        const double scale = s.get(i), zero = z ? z->get(i) : 0.0;
        if (seen_code.empty()) {
            const std::uint64_t key[2] = {bits_of(scale), bits_of(zero)};
            if (!seen_pair.emplace(reinterpret_cast<const char*>(key), sizeof key).second) continue;
        }
        for (std::size_t code = 0; code < codes; ++code) {
            const double w = (table[code] - zero) * scale;  // exact in f64, as the reference computes it
            if (!std::isnan(w) && round_to(d, w) != w) return false;
        }
    }
    return true;
}

}  // namespace moe::conformance
