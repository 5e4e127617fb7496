#pragma once
// The compression keys of a catalogue case (compression_keys.cpp), read by case_spec.cpp.
#include "catalog_json.hpp"
#include "moe/generator/case_spec.hpp"

namespace moe::generator {

// weight_dtype (present: the case is compressed), group_size (a number, or an object of one per
// weight), scale_dtype, zero_point, scale_layout, fp8_values, compressed_weights into
// c.compression; every refusal names the case and the key. Needs c's expert type and shape.
void parse_compression(const catalog_json::Json& j, CaseSpec& c, const catalog_json::Where& w);

}  // namespace moe::generator
