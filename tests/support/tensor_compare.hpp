#pragma once
// max |got - want| over max |want|: how far a backend's tensor is from the reference's.
#include <algorithm>
#include <cmath>

#include "moe/spec/tensor.hpp"

namespace moe::test {

inline double max_rel_diff(const Tensor& got, const Tensor& want) {
    double scale = 0, diff = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        scale = std::max(scale, std::fabs(want.get(i)));
        diff = std::max(diff, std::fabs(got.get(i) - want.get(i)));
    }
    return scale > 0 ? diff / scale : diff;
}

}  // namespace moe::test
