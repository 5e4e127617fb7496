#pragma once
// One expert's weight matrix as the op stores it: N outputs by K inputs, in its element type and
// layout, read in place (no copy). A compressed weight (spec/compressed.md) also carries its
// scale and zero point tensors, read in place as well.
#include <cstddef>

#include "moe/spec/problem.hpp"

namespace moe::backends::cpu {

struct WeightView {
    const unsigned char* data = nullptr;
    DType dtype = DType::f32;
    WeightLayout layout = WeightLayout::NK;  // NK: (n, k) at n * K + k; KN: at k * N + n
    std::size_t N = 0, K = 0;
    // Compressed weights only (always NK): the whole scale and zero-point tensors and where this
    // expert's groups are in them.
    const Tensor* scale = nullptr;
    const Tensor* zero = nullptr;  // absent: Z = 0
    std::size_t expert = 0, groups = 1, group_size = 0, scale_rows = 0;  // scale_rows: N, or 1 (shared)

    bool compressed() const { return scale != nullptr; }
    // Flat index of the scale (and zero point) of output row n, group g.
    std::size_t param(std::size_t n, std::size_t g) const {
        return (expert * scale_rows + (scale_rows == 1 ? 0 : n)) * groups + g;
    }
    // Bytes of one stored row of a compressed weight (4-bit: two elements per byte).
    std::size_t row_bytes() const { return storage_bytes(dtype, K); }
};

inline WeightView expert_view(const Tensor& w, std::size_t e, WeightLayout layout, const Tensor* scale = nullptr,
                              const Tensor* zero = nullptr) {
    const Shape& s = w.shape();
    WeightView v;
    v.dtype = w.dtype();
    v.layout = layout;
    v.N = layout == WeightLayout::NK ? s[1] : s[2];
    v.K = layout == WeightLayout::NK ? s[2] : s[1];
    // Whole experts: a 4-bit expert's N * K is even (validate() asks for an even K).
    v.data = w.data() + storage_bytes(w.dtype(), e * v.N * v.K);
    if (scale) {
        v.scale = scale;
        v.zero = zero;
        v.expert = e;
        v.scale_rows = scale->shape()[1];
        v.groups = scale->shape()[2];
        v.group_size = v.K / v.groups;
    }
    return v;
}

}  // namespace moe::backends::cpu
