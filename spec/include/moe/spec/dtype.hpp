#pragma once
// Element types of the operation's tensors and exact conversions between them and f64.
// f16 and bf16 are handled as bit patterns so that rounding is ours and the same everywhere.
//
// Besides the op's data types (f64, f32, f16, bf16) and index types (i32, i64), a weight may be
// stored compressed (spec/compressed.md): integers u8, i8, u4, i4, the OCP floats f4e2m1 (FP4),
// f8e4m3 and f8e5m2 (FP8), with scales in f32, f16, bf16 or f8e8m0 (the MX power-of-two scale).
// 4-bit elements share a byte in memory, two per byte, element 2i in the low nibble.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace moe {

enum class DType { f64, f32, f16, bf16, i32, i64, u8, i8, u4, i4, f4e2m1, f8e4m3, f8e5m2, f8e8m0 };

std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
std::size_t dtype_bits(DType t);  // 64, 32, 16, 8 or 4
// Bytes of one element for types of 8 bits or more. A 4-bit type's element takes one byte in a
// golden file and in numpy, but half a byte in memory: use storage_bytes() for memory.
std::size_t dtype_size(DType t);
// Bytes that `count` elements of `t` occupy in memory (4-bit types: two per byte).
std::size_t storage_bytes(DType t, std::size_t count);
// The op's data types f64, f32, f16, bf16 (the type T of hidden_states, biases and plain weights).
bool is_floating(DType t);
bool is_index_type(DType t);            // i32, i64
bool is_compressed_weight(DType t);     // u8, i8, u4, i4, f4e2m1, f8e4m3, f8e5m2
bool is_integer_weight(DType t);        // u8, i8, u4, i4: the types that take a zero point
bool is_scale_type(DType t);            // f32, f16, bf16, f8e8m0
// Smallest and largest value of an integer weight type (u4: 0, 15; i4: -8, 7; ...).
std::int64_t integer_min(DType t);
std::int64_t integer_max(DType t);

// Unit roundoff u = 2^-p of a floating type (p = significand bits incl. the implicit one).
double unit_roundoff(DType t);

double f16_bits_to_f64(std::uint16_t bits);   // exact
double bf16_bits_to_f64(std::uint16_t bits);  // exact
std::uint16_t f64_to_f16_bits(double v);      // round to nearest, ties to even; NaN stays NaN
std::uint16_t f64_to_bf16_bits(double v);     // round to nearest, ties to even; NaN stays NaN

// The OCP 8-bit and 4-bit float codes (spec/compressed.md has their value tables).
double f8e4m3_to_f64(std::uint8_t code);   // bias 7, no infinity, NaN = S.1111.111, max 448
double f8e5m2_to_f64(std::uint8_t code);   // bias 15, IEEE-like: infinities and NaNs, max 57344
double f4e2m1_to_f64(std::uint8_t code);   // bias 1, no infinity or NaN, max 6 (low 4 bits used)
double f8e8m0_to_f64(std::uint8_t code);   // 2^(code - 127); 0xFF is NaN; no zero, no sign
// Round to nearest, ties to even, saturating: a finite value beyond the largest becomes the
// largest. An infinity becomes E5M2's infinity, E4M3's and E2M1's largest value. NaN becomes the
// NaN code (E4M3 0x7F, E5M2 0x7E); E2M1 has none and E8M0 takes exact powers of two only: both
// throw InputError otherwise.
std::uint8_t f64_to_f8e4m3(double v);
std::uint8_t f64_to_f8e5m2(double v);
std::uint8_t f64_to_f4e2m1(double v);
std::uint8_t f64_to_f8e8m0(double v);

// v rounded to the nearest value of floating type t (ties to even), returned as f64.
double round_to(DType t, double v);

}  // namespace moe
