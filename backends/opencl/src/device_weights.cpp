#include "device_weights.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "moe/spec/compression.hpp"
#include "moe/spec/error.hpp"

namespace moe::backends::ocl {

namespace {

// [E, R, C] elements of `size` bytes to [E, C, R], in blocks that stay in cache.
std::vector<unsigned char> transpose_experts(const unsigned char* src, std::size_t E, std::size_t R, std::size_t C,
                                             std::size_t size) {
    std::vector<unsigned char> dst(E * R * C * size);
    constexpr std::size_t B = 32;
    for (std::size_t e = 0; e < E; ++e) {
        const unsigned char* s = src + e * R * C * size;
        unsigned char* d = dst.data() + e * R * C * size;
        for (std::size_t r0 = 0; r0 < R; r0 += B)
            for (std::size_t c0 = 0; c0 < C; c0 += B)
                for (std::size_t r = r0; r < std::min(R, r0 + B); ++r)
                    for (std::size_t c = c0; c < std::min(C, c0 + B); ++c)
                        std::memcpy(d + (c * R + r) * size, s + (r * C + c) * size, size);
    }
    return dst;
}

std::size_t gemm_pad(const Runtime& rt) { return rt.gemm().pad_elems() * sizeof(float); }

Weights placeholder(const Runtime& rt) {
    Weights w;
    w.buf = rt.buffer(0);
    return w;
}

// The element types compressed weight `name` of p goes to the device with: its codes, its scale, its
// zero point (-1: none). InputError for a type the kernels do not take.
CompressedTypes weight_types(const Problem& p, const char* name) {
    const bool zero = p.has(zero_point_input(name));
    return {elem_type(p.input(name).dtype()), elem_type(p.input(scale_input(name)).dtype()),
            zero ? elem_type(p.input(zero_point_input(name)).dtype()) : -1};
}

}  // namespace

Weights device_tensor(const Runtime& rt, const Tensor& t) {
    Weights w;
    w.buf = rt.buffer(t.nbytes(), t.data(), gemm_pad(rt));
    w.type = elem_type(t.dtype());
    return w;
}

// NK weights are on the device twice: transposed to KN for the tiled kernels (moe_gemm,
// moe_gemm_small: their tiles then load whole vectors of columns instead of transposing every
// weight into local memory), and as given for moe_gemm_rows, which streams NK weight rows
// (faster for a few rows than the KN tiled rows kernel).
Weights device_weight(const Runtime& rt, const Tensor& t, bool kn) {
    if (kn) return device_tensor(rt, t);
    const auto& s = t.shape();
    const auto bytes = transpose_experts(static_cast<const unsigned char*>(t.data()), s[0], s[1], s[2],
                                         t.nbytes() / std::max<std::size_t>(1, s[0] * s[1] * s[2]));
    Weights w;
    w.buf = rt.buffer(bytes.size(), bytes.data(), gemm_pad(rt));
    w.type = elem_type(t.dtype());
    w.nk = rt.buffer(t.nbytes(), t.data(), gemm_pad(rt));
    w.has_nk = true;
    return w;
}

Weights device_weight(const Runtime& rt, const Problem& p, const char* name, bool kn) {
    const Tensor& t = p.input(name);
    if (!is_compressed_weight(t.dtype())) return device_weight(rt, t, kn);
    // Compressed: the bytes as given, dequantised by the kernel that reads them.
    const CompressedTypes types = weight_types(p, name);
    Weights w;
    w.compressed = true;
    w.type = types.weight;
    w.buf = rt.buffer(0);
    w.nk = rt.buffer(t.nbytes(), t.data(), gemm_pad(rt));
    w.has_nk = true;  // the plan's NK rows kernels: what the other (plain, NK) weights of the case take
    const Tensor& s = p.input(scale_input(name));
    w.scale = rt.buffer(s.nbytes(), s.data(), gemm_pad(rt));
    w.scale_type = types.scale;
    w.scale_rows = static_cast<std::uint32_t>(s.shape()[1]);
    w.groups = static_cast<std::uint32_t>(s.shape()[2]);
    w.has_zero = types.zero >= 0;
    const Tensor* z = w.has_zero ? &p.input(zero_point_input(name)) : nullptr;
    w.zero = z ? rt.buffer(z->nbytes(), z->data(), gemm_pad(rt)) : rt.buffer(0);
    w.zero_type = w.has_zero ? types.zero : 0;
    return w;
}

CompressedTypes compressed_types(const Weights& w) {
    return {w.type, w.scale_type, w.has_zero ? w.zero_type : -1};
}

std::vector<CompressedTypes> compressed_types(const Problem& p) {
    const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    std::vector<CompressedTypes> out;
    for (const char* name : {kWeight0, kWeight1, kWeight2}) {
        if ((gemm2 && std::string(name) == kWeight2) || !p.has(name) || !is_compressed_weight(p.input(name).dtype()) ||
            !p.has(scale_input(name)))
            continue;
        try {
            const CompressedTypes t = weight_types(p, name);
            if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
        } catch (const InputError&) {
            continue;  // a type the backend does not take: the upload says which
        }
    }
    return out;
}

DeviceWeights upload_weights(const Runtime& rt, const Problem& p) {
    const bool gemm2 = p.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    const bool kn = resolve(p.attributes).weight_layout == WeightLayout::KN;
    DeviceWeights w;
    w.w0 = device_weight(rt, p, kWeight0, kn);
    w.w1 = device_weight(rt, p, kWeight1, kn);
    w.w2 = gemm2 ? placeholder(rt) : device_weight(rt, p, kWeight2, kn);
    w.has_b0 = gemm2 && p.has(kBias0);
    w.has_b1 = gemm2 && p.has(kBias1);
    w.b0 = w.has_b0 ? device_tensor(rt, p.input(kBias0)) : placeholder(rt);
    w.b1 = w.has_b1 ? device_tensor(rt, p.input(kBias1)) : placeholder(rt);
    return w;
}

}  // namespace moe::backends::ocl
