#pragma once
// Element types of the operation's tensors and exact conversions between them and f64.
// f16 and bf16 are handled as bit patterns so that rounding is ours and the same everywhere.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace moe {

enum class DType { f64, f32, f16, bf16, i32, i64 };

std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
std::size_t dtype_size(DType t);
bool is_floating(DType t);

// Unit roundoff u = 2^-p of a floating type (p = significand bits incl. the implicit one).
double unit_roundoff(DType t);

double f16_bits_to_f64(std::uint16_t bits);   // exact
double bf16_bits_to_f64(std::uint16_t bits);  // exact
std::uint16_t f64_to_f16_bits(double v);      // round to nearest, ties to even; NaN stays NaN
std::uint16_t f64_to_bf16_bits(double v);     // round to nearest, ties to even; NaN stays NaN

// v rounded to the nearest value of floating type t (ties to even), returned as f64.
double round_to(DType t, double v);

}  // namespace moe
