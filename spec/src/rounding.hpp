#pragma once
// Rounding to a binary floating format given by its parameters: shared by the 16-bit types
// (dtype.cpp) and the 8- and 4-bit OCP types (minifloat.cpp), so that every narrowing in the
// project rounds the same way.
#include <cmath>
#include <limits>

namespace moe::detail {

// Rounds a (finite, non-negative) to a binary format with `mant_bits` stored significand bits,
// minimum normal exponent `emin` and largest finite value `max_finite`; returns the f64 value, or
// +inf past the overflow midpoint (ties to even go to infinity, as IEEE does).
inline double round_binary(double a, int mant_bits, int emin, double max_finite) {
    if (a == 0.0) return 0.0;
    int e;
    std::frexp(a, &e);          // a = m * 2^e, m in [0.5, 1)
    int exp = e - 1;            // a in [2^exp, 2^(exp+1))
    if (exp < emin) exp = emin;  // subnormal range: fixed quantum
    const double quantum = std::ldexp(1.0, exp - mant_bits);
    // a / quantum is exact (power-of-two scaling); nearbyint rounds ties to even under the
    // default rounding mode.
    const double r = std::nearbyint(a / quantum) * quantum;
    const double overflow_edge = max_finite + std::ldexp(1.0, std::ilogb(max_finite) - mant_bits - 1);
    if (a >= overflow_edge) return std::numeric_limits<double>::infinity();
    return r > max_finite ? max_finite : r;
}

}  // namespace moe::detail
