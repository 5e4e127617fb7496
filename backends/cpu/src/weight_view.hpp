#pragma once
// One expert's weight matrix as the op stores it: N outputs by K inputs, in its element type and
// layout, read in place (no copy).
#include <cstddef>

#include "moe/spec/problem.hpp"

namespace moe::backends::cpu {

struct WeightView {
    const unsigned char* data = nullptr;
    DType dtype = DType::f32;
    WeightLayout layout = WeightLayout::NK;  // NK: (n, k) at n * K + k; KN: at k * N + n
    std::size_t N = 0, K = 0;
};

inline WeightView expert_view(const Tensor& w, std::size_t e, WeightLayout layout) {
    const Shape& s = w.shape();
    WeightView v;
    v.dtype = w.dtype();
    v.layout = layout;
    v.N = layout == WeightLayout::NK ? s[1] : s[2];
    v.K = layout == WeightLayout::NK ? s[2] : s[1];
    v.data = w.data() + e * v.N * v.K * dtype_size(w.dtype());
    return v;
}

}  // namespace moe::backends::cpu
