#pragma once
// How far a backend's tensor is from the reference's.
#include <algorithm>
#include <cmath>

#include "moe/spec/tensor.hpp"

namespace moe::test {

// max |got - want| over max |want|.
inline double max_rel_diff(const Tensor& got, const Tensor& want) {
    double scale = 0, diff = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        scale = std::max(scale, std::fabs(want.get(i)));
        diff = std::max(diff, std::fabs(got.get(i) - want.get(i)));
    }
    return scale > 0 ? diff / scale : diff;
}

inline double max_abs(const Tensor& t) {
    double m = 0.0;
    for (double v : t.to_f64()) m = std::max(m, std::fabs(v));
    return m;
}

// max |a - b|; the shapes must agree (checked by the caller's REQUIRE).
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
    const auto va = a.to_f64(), vb = b.to_f64();
    double m = 0.0;
    for (std::size_t i = 0; i < va.size() && i < vb.size(); ++i) m = std::max(m, std::fabs(va[i] - vb[i]));
    return m;
}

}  // namespace moe::test
