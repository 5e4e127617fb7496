#pragma once
// How far apart two tensors are, for checks that a mutant's output differs from the correct
// one. Whether an output is correct is not judged here: conformance_check.hpp judges it with the
// product's comparison.
#include <algorithm>
#include <cmath>

#include "moe/spec/tensor.hpp"

namespace moe::test {

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
