// The compressed-weight rules of spec/README.md, "Rejected inputs" (spec/compressed.md says why
// each layout is accepted). validate() calls this once the weights' [E, N, K] shapes are checked.
#include <cmath>
#include <string>

#include "moe/spec/compression.hpp"
#include "moe/spec/error.hpp"

namespace moe {

namespace {

std::string type_name(DType t) { return std::string(dtype_name(t)); }

std::string index3(std::size_t a, std::size_t b, std::size_t c) {
    return "[" + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(c) + "]";
}

// The logical [E, N or 1, G] of a scale or zero point given as [E, Ns, G] or [E, Ns, G, 1].
Shape param_dims(const Tensor& t) {
    const Shape& s = t.shape();
    if (s.size() == 4 && s[3] == 1) return {s[0], s[1], s[2]};
    return s;
}

void check_scale(const std::string& weight, const Tensor& w, const Tensor& s, bool check_values) {
    const std::string name = scale_input(weight);
    const DType wt = w.dtype();
    if (wt == DType::f4e2m1 && s.dtype() != DType::f8e8m0)
        throw InputError(name + ": f4e2m1 weights (MXFP4) take f8e8m0 scales, got element type " + type_name(s.dtype()));
    if (wt != DType::f4e2m1 && s.dtype() != DType::f32 && s.dtype() != DType::f16 && s.dtype() != DType::bf16)
        throw InputError(name + ": element type " + type_name(s.dtype()) + " is not a scale type for " + type_name(wt) +
                         " weights (f32, f16 or bf16; f8e8m0 scales go with f4e2m1 weights, MXFP4)");
    const std::size_t E = w.shape()[0], N = w.shape()[1], K = w.shape()[2];
    const Shape dims = param_dims(s);
    if (dims.size() != 3 || dims[0] != E || (dims[1] != N && dims[1] != 1) || dims[2] == 0)
        throw InputError(name + ": expected shape [E, N, G] or [E, N, G, 1] with E = " + std::to_string(E) +
                         ", N = " + std::to_string(N) + " (or 1: one scale row for all N) and G >= 1 groups, but got " +
                         shape_to_string(s.shape()));
    const std::size_t G = dims[2];
    if (K % G != 0)
        throw InputError(name + ": shape " + shape_to_string(s.shape()) + " has G = " + std::to_string(G) +
                         " groups along K = " + std::to_string(K) + " of " + weight +
                         ", but the group size K / G must be a whole number (G must divide K)");
    if (wt == DType::f4e2m1 && K / G != kMxBlock)
        throw InputError(name + ": MXFP4 (f4e2m1 weights) has one scale per block of 32 inputs: expected G = K / 32 = " +
                         (K % kMxBlock ? std::string("(K = ") + std::to_string(K) + " is not a multiple of 32)"
                                       : std::to_string(K / kMxBlock)) +
                         " groups, got " + std::to_string(G));
    if (s.dtype() == DType::f8e8m0 && check_values)
        for (std::size_t i = 0; i < s.size(); ++i)
            if (s.code(i) == 0xff)
                throw InputError(name + ": element " + index3(i / (dims[1] * G), i / G % dims[1], i % G) +
                                 " is the E8M0 NaN (0xFF); a block's scale must be a number");
}

void check_zero_point(const std::string& weight, const Tensor& w, const Tensor& s, const Tensor& z, bool check_values) {
    const std::string name = zero_point_input(weight);
    const DType wt = w.dtype();
    if (!is_integer_weight(wt))
        throw InputError(name + ": " + type_name(wt) + " weights take no zero point (only u8, i8, u4 and i4 do)");
    if (z.dtype() != wt && z.dtype() != DType::f16)
        throw InputError(name + ": element type " + type_name(z.dtype()) + " (expected " + type_name(wt) +
                         ", the weight's type, or f16)");
    const Shape dims = param_dims(z);
    if (dims != param_dims(s))
        throw InputError(name + ": shape " + shape_to_string(z.shape()) + " does not match " + scale_input(weight) + " " +
                         shape_to_string(s.shape()) + " (a zero point per scale, the same [E, N, G])");
    if (z.dtype() != DType::f16 || !check_values) return;  // in the weight's type it is in range by construction
    const double lo = static_cast<double>(integer_min(wt)), hi = static_cast<double>(integer_max(wt));
    for (std::size_t i = 0; i < z.size(); ++i) {
        const double v = z.get(i);
        if (!(std::trunc(v) == v) || v < lo || v > hi)
            throw InputError(name + ": element " + index3(i / (dims[1] * dims[2]), i / dims[2] % dims[1], i % dims[2]) +
                             " = " + std::to_string(v) + " is not an integer in " + type_name(wt) + "'s range [" +
                             std::to_string(integer_min(wt)) + ", " + std::to_string(integer_max(wt)) + "]");
    }
}

}  // namespace

void check_compressed_layout(const Problem& p, WeightLayout layout) {
    if (layout == WeightLayout::NK) return;
    for (const char* weight : {kWeight0, kWeight1, kWeight2})
        if (p.has(weight) && is_compressed_weight(p.input(weight).dtype()))
            throw InputError(std::string(weight) + ": compressed weights are stored [E, N, K] (weight_layout NK, "
                                                   "OpenVINO's transposed layout), but this case's convention gives "
                                                   "weight_layout KN");
}

void validate_compression(const Problem& p, WeightLayout layout, bool check_values) {
    check_compressed_layout(p, layout);
    for (const char* n : kCompressionInputNames) {
        const std::string name = n;
        if (!p.has(name)) continue;
        const std::string weight = name.substr(0, name.find('_', 7));  // "weight_0"
        if (!p.has(weight)) throw InputError("input " + name + " is given but there is no " + weight);
    }
    for (const char* wn : kWeightNames) {
        const std::string weight = wn;
        if (!p.has(weight)) continue;
        const Tensor& w = p.input(weight);
        const bool has_scale = p.has(scale_input(weight)), has_zero = p.has(zero_point_input(weight));
        if (!is_compressed_weight(w.dtype())) {
            if (has_scale || has_zero)
                throw InputError((has_scale ? scale_input(weight) : zero_point_input(weight)) + " is given but " + weight +
                                 " is not compressed (element type " + type_name(w.dtype()) + ")");
            continue;
        }
        if (has_zero && !has_scale)
            throw InputError(zero_point_input(weight) + " is given without " + scale_input(weight) +
                             " (a zero point needs a scale)");
        if (!has_scale)
            throw InputError(weight + ": compressed element type " + type_name(w.dtype()) + " needs " +
                             scale_input(weight));
        if (dtype_bits(w.dtype()) == 4 && w.shape()[2] % 2 != 0)
            throw InputError(weight + ": 4-bit element type " + type_name(w.dtype()) + " needs an even input size K (two "
                             "elements per byte, every row starting on a byte), got shape " + shape_to_string(w.shape()));
        const Tensor& s = p.input(scale_input(weight));
        check_scale(weight, w, s, check_values);
        if (has_zero) check_zero_point(weight, w, s, p.input(zero_point_input(weight)), check_values);
    }
}

}  // namespace moe
