#pragma once
// The elementwise functions of the operation, in f64, shared by the dense and sparse modes so
// that both give the same bits. NaN propagates through every one of them.
#include <cmath>

namespace moe::reference {

// e^x from a fixed sequence of IEEE operations (no libm), so golden data does not depend on
// the machine's libm variant. Within 2 ulp of the exact value (tests/test_scalar_math.cpp).
double exp_portable(double x);

// swish(x; beta) = x * sigmoid(beta x), written as OpenVINO's reference writes it.
inline double swish(double x, double beta) { return x / (1.0 + exp_portable(-beta * x)); }

inline double minimum(double x, double limit) { return std::isnan(x) || x < limit ? x : limit; }

inline double clamp(double x, double lo, double hi) {
    if (std::isnan(x)) return x;
    return x < lo ? lo : (x > hi ? hi : x);
}

// GEMM2 activation of one lane pair: (clamp(lin, -L, L) + 1) * swish(min(gate, L); beta).
inline double gemm2_activation(double gate, double lin, double limit, double beta) {
    return (clamp(lin, -limit, limit) + 1.0) * swish(minimum(gate, limit), beta);
}

// GEMM3 activation: swish(gate; beta) * up.
inline double gemm3_activation(double gate, double up, double beta) { return swish(gate, beta) * up; }

}  // namespace moe::reference
