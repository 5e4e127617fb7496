#pragma once
// A plain problem's weights stored compressed (spec/compressed.md), with the spec library alone:
// each group's values quantised to the type with a scale (and for the unsigned integer types a
// zero point) chosen from the group's largest magnitude. For the tests of every layer; the
// generator has its own synthesis (tools/generator/src/compressed_synthesis.cpp).
#include <algorithm>
#include <cmath>
#include <string>

#include "moe/spec/compression.hpp"
#include "moe/spec/problem.hpp"

namespace moe::test {

struct CompressOptions {
    DType type = DType::u4;
    std::size_t group_size = 0;      // 0: per channel (K); f4e2m1 always 32
    DType scale_type = DType::f16;   // f4e2m1: f8e8m0 always
    bool zero_point = false;         // integer types: a zero point in the weight's type
    bool zero_point_f16 = false;     // ... stored as f16 instead
    bool scale_rank4 = false;        // scale [E, N, G, 1] instead of [E, N, G]
    bool per_tensor = false;         // scale [E, 1, 1]
};

// The largest magnitude a code of `t` stands for (integers: around the zero point).
inline double code_range(DType t) {
    switch (t) {
        case DType::u8: case DType::i8: return 127.0;
        case DType::u4: case DType::i4: return 7.0;
        case DType::f4e2m1: return 6.0;
        case DType::f8e4m3: return 448.0;
        case DType::f8e5m2: return 57344.0;
        default: return 1.0;
    }
}

// Replaces `weight` (NK layout, [E, N, K]) by its compressed form.
inline void compress_weight(Problem& p, const std::string& weight, const CompressOptions& o) {
    const Tensor plain = p.input(weight);
    const std::size_t E = plain.shape()[0], N = plain.shape()[1], K = plain.shape()[2];
    const std::size_t gs = o.type == DType::f4e2m1 ? kMxBlock : (o.group_size ? o.group_size : K);
    const std::size_t G = o.per_tensor ? 1 : K / gs, rows = o.per_tensor ? 1 : N;
    const DType st = o.type == DType::f4e2m1 ? DType::f8e8m0 : o.scale_type;
    Shape sshape = {E, rows, G};
    if (o.scale_rank4) sshape.push_back(1);
    Tensor w(o.type, {E, N, K}), s(st, sshape);
    const bool with_zero = (o.zero_point || o.zero_point_f16) && is_integer_weight(o.type);
    Tensor z(o.zero_point_f16 ? DType::f16 : o.type, sshape);
    const double zero_value = o.type == DType::u8 ? 128.0 : o.type == DType::u4 ? 8.0 : 0.0;
    for (std::size_t e = 0; e < E; ++e)
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t g = 0; g < G; ++g) {
                const std::size_t k0 = o.per_tensor ? 0 : g * gs, k1 = o.per_tensor ? K : k0 + gs;
                const std::size_t n0 = o.per_tensor ? 0 : r, n1 = o.per_tensor ? N : r + 1;
                double amax = 0.0;
                for (std::size_t n = n0; n < n1; ++n)
                    for (std::size_t k = k0; k < k1; ++k) amax = std::max(amax, std::fabs(plain.get((e * N + n) * K + k)));
                double scale = (amax > 0 ? amax : 1.0) / code_range(o.type);
                if (st == DType::f8e8m0) scale = std::ldexp(1.0, static_cast<int>(std::ceil(std::log2(scale))));
                scale = round_to(st == DType::f8e8m0 ? DType::f32 : st, scale);
                const std::size_t param = (e * rows + r) * G + g;
                s.set(param, scale);
                const double zero = with_zero ? zero_value : 0.0;
                if (with_zero) z.set(param, zero);
                for (std::size_t n = n0; n < n1; ++n)
                    for (std::size_t k = k0; k < k1; ++k) {
                        const double v = plain.get((e * N + n) * K + k) / scale;
                        double q;
                        if (is_integer_weight(o.type)) {
                            q = std::nearbyint(v) + (with_zero ? zero : 0.0);
                            q = std::min(std::max(q, static_cast<double>(integer_min(o.type))),
                                         static_cast<double>(integer_max(o.type)));
                        } else {
                            q = v;  // set() rounds to the float type
                        }
                        w.set((e * N + n) * K + k, q);
                    }
            }
    p.inputs[weight] = std::move(w);
    p.inputs[scale_input(weight)] = std::move(s);
    if (with_zero) p.inputs[zero_point_input(weight)] = std::move(z);
}

inline void compress_all_weights(Problem& p, const CompressOptions& o) {
    for (const char* w : kWeightNames)
        if (p.has(w)) compress_weight(p, w, o);
}

}  // namespace moe::test
