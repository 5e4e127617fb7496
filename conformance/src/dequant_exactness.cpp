#include "dequant_exactness.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <unordered_set>
#include <vector>

#include "moe/spec/compression.hpp"

namespace moe::conformance {

namespace {

// The values of every code of the stored type: the 16 nibbles of a 4-bit type, the 256 bytes of
// an 8-bit one.
std::vector<double> code_values(DType t) {
    Tensor one(t, {1});
    std::vector<double> values;
    const unsigned codes = dtype_bits(t) == 4 ? 16 : 256;
    for (unsigned c = 0; c < codes; ++c) {
        one.data()[0] = static_cast<unsigned char>(c);
        values.push_back(one.get(0));
    }
    return values;
}

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
    const std::vector<double> codes = code_values(c->weight);
    // Scales repeat (MXFP4's E8M0 has 254 values; power-of-two scales, the only ones that can
    // fit, few more): each (scale, zero point) pair is tried once. A pair that does not fit ends
    // the scan, which for the usual f16/bf16/f32 scales is the first.
    std::unordered_set<std::uint64_t> seen_scale;
    std::unordered_set<std::string> seen_pair;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const double scale = s.get(i), zero = z ? z->get(i) : 0.0;
        if (!z) {
            if (!seen_scale.insert(bits_of(scale)).second) continue;
        } else {
            const std::uint64_t key[2] = {bits_of(scale), bits_of(zero)};
            if (!seen_pair.emplace(reinterpret_cast<const char*>(key), sizeof key).second) continue;
        }
        for (double code : codes) {
            const double w = (code - zero) * scale;  // exact in f64, as the reference computes it
            if (!std::isnan(w) && round_to(d, w) != w) return false;
        }
    }
    return true;
}

}  // namespace moe::conformance
