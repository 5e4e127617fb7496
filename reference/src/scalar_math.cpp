#include "moe/reference/scalar_math.hpp"

#include <limits>

namespace moe::reference {

double exp_portable(double x) {
    if (std::isnan(x)) return x;
    if (x > 709.782712893384) return std::numeric_limits<double>::infinity();
    if (x < -745.1332191019412) return 0.0;
    // x = k ln2 + r with |r| <= ln2/2 (Cody-Waite). ln2_hi's last 21 bits are zero, so k * ln2_hi
    // is exact for every k in range and r carries no cancellation error beyond ln2_lo's.
    constexpr double inv_ln2 = 1.4426950408889634;
    constexpr double ln2_hi = 6.93147180369123816490e-01;
    constexpr double ln2_lo = 1.90821492927058770002e-10;
    const double k = std::nearbyint(x * inv_ln2);
    const double r = (x - k * ln2_hi) - k * ln2_lo;
    // Taylor polynomial of degree 13: truncation error below 2^-57 relative for |r| <= 0.35.
    constexpr double c[] = {1.0,
                            1.0,
                            1.0 / 2,
                            1.0 / 6,
                            1.0 / 24,
                            1.0 / 120,
                            1.0 / 720,
                            1.0 / 5040,
                            1.0 / 40320,
                            1.0 / 362880,
                            1.0 / 3628800,
                            1.0 / 39916800,
                            1.0 / 479001600,
                            1.0 / 6227020800.0};
    double p = c[13];
    for (int i = 12; i >= 0; --i) p = p * r + c[i];
    return std::ldexp(p, static_cast<int>(k));
}

}  // namespace moe::reference
