// The catalogue's compression keys (spec/catalog-format.md, "Compressed weights"), apart from
// the rest of a case's keys: they grew a per-weight form of group_size.
#include "compression_keys.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "moe/spec/compression.hpp"

namespace moe::generator {

using catalog_json::Json;
using catalog_json::Where;
using catalog_json::get;

namespace {

// group_size as an object: a size for each compressed weight, each checked here against that
// weight's K (the shape is known), so a typo is named with its key rather than found by synthesis.
void parse_group_sizes(const Json& g, CompressionSpec& cs, const CaseSpec& c, const Where& w) {
    const bool gemm2 = c.attributes.expert_type == ExpertType::gemm2_bias_swiglu_clamp;
    const std::vector<std::string> names = gemm2 ? std::vector<std::string>{kWeight0, kWeight1}
                                                 : std::vector<std::string>{kWeight0, kWeight1, kWeight2};
    // K of each weight: gate and up (weight_0, GEMM3's weight_1) read H; the down GEMM reads I.
    auto k_of = [&](const std::string& n) { return n == kWeight0 || (n == kWeight1 && !gemm2) ? c.hidden : c.inter; };
    for (const auto& [name, v] : g.items()) {
        const std::string key = "group_size." + name;
        if (std::find(names.begin(), names.end(), name) == names.end())
            w.fail(key, std::string("not a weight of ") + (gemm2 ? "GEMM2 (weight_0, weight_1)" : "GEMM3 (weight_0, weight_1, weight_2)"));
        if (!cs.compresses(name)) w.fail(key, name + " is not compressed in this case (compressed_weights)");
        const auto gs = catalog_json::integer<std::size_t>(v, key, w);
        if (cs.type == DType::f4e2m1 && gs != 0 && gs != kMxBlock) w.fail(key, "MXFP4 blocks are 32 inputs");
        const std::size_t K = k_of(name);
        if (gs != 0 && cs.type != DType::f4e2m1 && K % gs != 0)
            w.fail(key, std::to_string(gs) + " does not divide K = " + std::to_string(K) + " of " + name +
                            " (0 is per channel)");
        cs.group_sizes[name] = cs.type == DType::f4e2m1 ? kMxBlock : gs;
    }
    // Every compressed weight named: a weight left out would silently take a size nobody wrote.
    for (const auto& n : names)
        if (cs.compresses(n) && !cs.group_sizes.count(n))
            w.fail("group_size", n + " is compressed but has no group size: the object form gives one for each "
                                 "compressed weight (a number gives all of them one)");
}

}  // namespace

// The compression keys: weight_dtype (present: the case is compressed), group_size,
// scale_dtype, zero_point, scale_layout, fp8_values, compressed_weights.
void parse_compression(const Json& j, CaseSpec& c, const Where& w) {
    const bool any = j.contains("weight_dtype") || j.contains("group_size") || j.contains("scale_dtype") ||
                     j.contains("zero_point") || j.contains("scale_layout") || j.contains("fp8_values") ||
                     j.contains("compressed_weights");
    if (!any) return;
    if (!j.contains("weight_dtype")) w.fail("weight_dtype", "missing: the compression keys need the compressed type");
    CompressionSpec cs;
    const auto type_name = get<std::string>(j, "weight_dtype", w);
    const auto t = parse_dtype(type_name);
    if (!t || !is_compressed_weight(*t))
        w.fail("weight_dtype", "'" + type_name + "' is not a compressed weight type (u8, i8, u4, i4, f4e2m1, f8e4m3, f8e5m2)");
    cs.type = *t;
    cs.scale_dtype = cs.type == DType::f4e2m1 ? DType::f8e8m0
                     : (cs.type == DType::f8e4m3 || cs.type == DType::f8e5m2) ? DType::f32 : DType::f16;
    if (j.contains("scale_dtype")) {
        const auto name = get<std::string>(j, "scale_dtype", w);
        const auto st = parse_dtype(name);
        if (!st || !is_scale_type(*st)) w.fail("scale_dtype", "'" + name + "' is not a scale type (f32, f16, bf16, f8e8m0)");
        if ((*st == DType::f8e8m0) != (cs.type == DType::f4e2m1))
            w.fail("scale_dtype", "f8e8m0 scales go with f4e2m1 weights (MXFP4), and only with them");
        cs.scale_dtype = *st;
    }
    // The object form (a size per weight) is read once compressed_weights is known, below.
    const bool per_weight = j.contains("group_size") && j.at("group_size").is_object();
    if (j.contains("group_size") && !per_weight) cs.group_size = get<std::size_t>(j, "group_size", w);
    if (cs.type == DType::f4e2m1) {
        if (cs.group_size != 0 && cs.group_size != kMxBlock) w.fail("group_size", "MXFP4 blocks are 32 inputs");
        cs.group_size = kMxBlock;
    }
    if (j.contains("zero_point")) {
        const auto z = get<std::string>(j, "zero_point", w);
        if (z == "none") cs.zero_point = CompressionSpec::ZeroPoint::none;
        else if (z == "weight_type") cs.zero_point = CompressionSpec::ZeroPoint::weight_type;
        else if (z == "f16") cs.zero_point = CompressionSpec::ZeroPoint::f16;
        else w.fail("zero_point", "expected none, weight_type or f16");
        if (cs.zero_point != CompressionSpec::ZeroPoint::none && !is_integer_weight(cs.type))
            w.fail("zero_point", "only the integer types u8, i8, u4, i4 take a zero point");
    }
    if (j.contains("scale_layout")) {
        const auto l = get<std::string>(j, "scale_layout", w);
        if (l == "ENG") cs.scale_layout = CompressionSpec::ScaleLayout::ENG;
        else if (l == "ENG1") cs.scale_layout = CompressionSpec::ScaleLayout::ENG1;
        else if (l == "E1G") cs.scale_layout = CompressionSpec::ScaleLayout::E1G;
        else w.fail("scale_layout", "expected ENG, ENG1 or E1G");
    }
    if (j.contains("fp8_values")) {
        const auto v = get<std::string>(j, "fp8_values", w);
        if (v != "wide" && v != "bottom") w.fail("fp8_values", "expected wide or bottom");
        if (cs.type != DType::f8e4m3 && cs.type != DType::f8e5m2)
            w.fail("fp8_values", "only the FP8 types f8e4m3 and f8e5m2 take it");
        cs.fp8_bottom = v == "bottom";
    }
    if (j.contains("compressed_weights")) {
        cs.weights = get<std::vector<std::string>>(j, "compressed_weights", w);
        for (const auto& n : cs.weights)
            if (n != kWeight0 && n != kWeight1 && n != kWeight2)
                w.fail("compressed_weights", "'" + n + "' is not weight_0, weight_1 or weight_2");
    }
    if (per_weight) parse_group_sizes(j.at("group_size"), cs, c, w);
    c.compression = cs;
}

bool CompressionSpec::compresses(const std::string& weight) const {
    return weights.empty() || std::find(weights.begin(), weights.end(), weight) != weights.end();
}

std::size_t CompressionSpec::group_size_of(const std::string& weight) const {
    const auto it = group_sizes.find(weight);
    return it != group_sizes.end() ? it->second : group_size;
}

}  // namespace moe::generator
