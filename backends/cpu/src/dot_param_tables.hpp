#pragma once
// The per-item tables of block scales and zero points that the bf16 dot kernels
// (compressed_dot_kernels.cpp) read where a weight's scales and zero points are not read as stored:
// a group's value repeated for each 32-element block of it, zero points as bytes. AVX-512 (the
// callers run only where the dot kernels do).
#include <cstddef>

namespace moe::backends::cpu {

// count bytes of nibble pairs (low nibble first) as 2 * count bytes, each nibble plus bias (mod 16:
// i4's two's complement codes become z + 8).
void expand_nibbles(const unsigned char* src, std::size_t count, unsigned char bias, unsigned char* out);

// Each of count values repeated p times, out[i] = in[i / p]; `in` padded by 16 values.
void repeat_floats(const float* in, std::size_t count, std::size_t p, float* out);

// The same for bytes; `in` padded by 64.
void repeat_bytes(const unsigned char* in, std::size_t count, std::size_t p, unsigned char* out);

// count zero points (integers in the weight type's range, as floats) as bytes plus bias.
void bytes_from_floats(const float* in, std::size_t count, unsigned char bias, unsigned char* out);

}  // namespace moe::backends::cpu
