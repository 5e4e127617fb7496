#include "moe/generator/random_stream.hpp"

namespace moe::generator {

namespace {
std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

RandomStream::RandomStream(std::uint64_t seed, std::string_view label) {
    std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a of the label
    for (unsigned char c : label) h = (h ^ c) * 0x100000001b3ULL;
    std::uint64_t x = seed ^ rotl(h, 17);
    for (auto& s : s_) s = splitmix64(x);
}

std::uint64_t RandomStream::next_u64() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

double RandomStream::uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double RandomStream::uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }

double RandomStream::normal() {
    double s = 0.0;
    for (int i = 0; i < 12; ++i) s += uniform01();
    return s - 6.0;
}

std::uint64_t RandomStream::below(std::uint64_t n) {
    // Rejection sampling on the top of the range keeps every value equally likely.
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    std::uint64_t v;
    do v = next_u64();
    while (v >= limit);
    return v % n;
}

}  // namespace moe::generator
