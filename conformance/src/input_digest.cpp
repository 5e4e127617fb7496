#include "input_digest.hpp"

#include <cstring>

namespace moe::conformance {

namespace {

// Four independent multiply-xor lanes over 8-byte words (so the loop runs at memory speed, not
// at one multiply's latency per word), folded at the end. Not cryptographic: it guards against
// accidents, not against a backend that wants to hide a write.
std::uint64_t fingerprint(const unsigned char* p, std::size_t n, std::uint64_t seed) {
    constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ull;
    std::uint64_t lane[4] = {seed, seed ^ 0x243F6A8885A308D3ull, seed ^ 0x13198A2E03707344ull,
                             seed ^ 0xA4093822299F31D0ull};
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; ++k) {
            std::uint64_t w;
            std::memcpy(&w, p + i + 8 * k, 8);
            lane[k] = (lane[k] ^ w) * kMul;
            lane[k] ^= lane[k] >> 29;
        }
    std::uint64_t h = n;
    for (; i < n; ++i) h = (h ^ p[i]) * kMul;
    for (int k = 0; k < 4; ++k) h = ((h ^ lane[k]) * kMul) ^ (h >> 31);
    return h;
}

std::uint64_t digest_of(const Tensor& t) {
    std::uint64_t seed = static_cast<std::uint64_t>(t.dtype()) + 1;
    for (std::size_t d : t.shape()) seed = (seed ^ d) * 0x100000001B3ull;
    return fingerprint(t.data(), t.nbytes(), seed);
}

}  // namespace

InputDigest digest_inputs(const Problem& p) {
    InputDigest d;
    d.reserve(p.inputs.size());
    for (const auto& [name, t] : p.inputs) d.emplace_back(name, digest_of(t));
    return d;
}

std::vector<std::string> changed_inputs(const Problem& p, const InputDigest& before) {
    std::vector<std::string> changed;
    for (const auto& [name, h] : before) {
        const auto it = p.inputs.find(name);
        if (it == p.inputs.end() || digest_of(it->second) != h) changed.push_back(name);
    }
    for (const auto& [name, t] : p.inputs) {
        bool known = false;
        for (const auto& b : before) known = known || b.first == name;
        if (!known) changed.push_back(name);
    }
    return changed;
}

}  // namespace moe::conformance
