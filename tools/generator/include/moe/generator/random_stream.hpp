#pragma once
// Deterministic random numbers for golden data. Every tensor draws from its own stream, keyed by
// (case seed, label), so adding a tensor or a case never changes another's values. Only integer
// arithmetic and IEEE division/multiplication are used: the same bits on every machine
// (std::*_distribution is implementation-defined, so it is not used).
#include <cstdint>
#include <string_view>

namespace moe::generator {

class RandomStream {
public:
    RandomStream(std::uint64_t seed, std::string_view label);
    std::uint64_t next_u64();                // xoshiro256**
    double uniform01();                      // [0, 1), 53 random bits
    double uniform(double lo, double hi);    // [lo, hi)
    double normal();                         // Irwin-Hall: sum of 12 uniforms minus 6 (mean 0, var 1)
    std::uint64_t below(std::uint64_t n);    // uniform integer in [0, n), unbiased

private:
    std::uint64_t s_[4];
};

}  // namespace moe::generator
