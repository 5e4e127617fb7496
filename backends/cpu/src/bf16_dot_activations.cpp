// A's rows for the bf16 dot kernels (compressed_dot_kernels.hpp): whether they can take them, and
// their arrangement in the order the decoded nibbles come.
#include <algorithm>
#include <cstdint>

#include "compressed_dot_kernels.hpp"
#include "dot_chunk_decode.hpp"

namespace moe::backends::cpu {

// Whether the rows of A can go through the bf16 dot kernels: every element bf16 exactly (the low
// 16 bits clear) and every nonzero one at least 2^-100 in magnitude (why: dot_chunk_decode.hpp).
bool bf16_dot_rows_ok(const float* A, std::size_t M, std::size_t lda, std::size_t K) {
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t k = 0; k < K; ++k) {
            const std::uint32_t b = f32_bits(A[m * lda + k]);
            if ((b & 0xffffu) != 0 || tiny_nonzero(b)) return false;
        }
    return true;
}

// A's rows as bf16 in the order the kernels take them: per 128-element chunk c, four vectors of 32
// words, vector j's word w = x[128c + 4w + j] (nibble j of the weight row's word w); the last
// chunk padded with zeros. Exact: the values are bf16 (bf16_dot_rows_ok).
void arrange_bf16(const float* A, std::size_t M, std::size_t lda, std::size_t K, std::uint16_t* X) {
    const std::size_t chunks = (K + kDotChunk - 1) / kDotChunk;
    std::fill(X, X + M * chunks * kDotChunk, std::uint16_t{0});
    for (std::size_t m = 0; m < M; ++m)
        for (std::size_t k = 0; k < K; ++k) {
            const std::size_t c = k / kDotChunk, r = k % kDotChunk;
            X[(m * chunks + c) * kDotChunk + (r % 4) * 32 + r / 4] =
                static_cast<std::uint16_t>(f32_bits(A[m * lda + k]) >> 16);
        }
}

}  // namespace moe::backends::cpu
