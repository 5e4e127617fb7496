#pragma once
// The two ends of each floating type's range, for the tolerance (tolerance.cpp,
// underflow_floor.cpp) and the range check (declared_range.cpp).
#include <algorithm>
#include <cmath>
#include <limits>

#include "moe/spec/dtype.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::conformance {

// Below it a value rounds absolutely, to a multiple of it (0 for a non-floating type).
inline double smallest_subnormal(DType t) {
    switch (t) {
        case DType::f64: return std::numeric_limits<double>::denorm_min();
        case DType::f32: return static_cast<double>(std::numeric_limits<float>::denorm_min());
        case DType::f16: return std::ldexp(1.0, -24);
        case DType::bf16: return std::ldexp(1.0, -133);
        default: return 0.0;
    }
}

// Past it a value is an infinity in the type (infinity for a non-floating type).
inline double largest_finite(DType t) {
    switch (t) {
        case DType::f64: return std::numeric_limits<double>::max();
        case DType::f32: return static_cast<double>(std::numeric_limits<float>::max());
        case DType::f16: return 65504.0;
        case DType::bf16: return std::ldexp(255.0, 120);  // 0x7F7F
        default: return std::numeric_limits<double>::infinity();
    }
}

// The largest finite magnitude in `t` (0 for none): what a range is checked against. Non-finite
// data is compared by class, never by a bound.
inline double finite_max_abs(const Tensor& t) {
    double m = 0.0;
    for (std::size_t i = 0; i < t.size(); ++i)
        if (std::isfinite(t.get(i))) m = std::max(m, std::fabs(t.get(i)));
    return m;
}

}  // namespace moe::conformance
