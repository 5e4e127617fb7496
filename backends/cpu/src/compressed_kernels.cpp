#include "compressed_kernels.hpp"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "cache_line_vector.hpp"
#include "compressed_dot_kernels.hpp"
#include "compressed_values.hpp"
#include "cpu_features.hpp"
#include "e4m3_decode.hpp"
#include "lane_masks.hpp"
#include "parallel_work.hpp"

namespace moe::backends::cpu {

namespace {

// ---- values of codes, scales and zero points --------------------------------------------------

// The stored code of element `flat` of a tensor of at most 8 bits (4-bit: low nibble first).
inline unsigned code_at(const unsigned char* base, DType t, std::size_t flat) {
    if (dtype_bits(t) != 4) return base[flat];
    const unsigned b = base[flat / 2];
    return flat % 2 ? b >> 4 : b & 0x0fu;
}

// A scale or zero point element, read in place in its own type.
double param_value(const Tensor& t, std::size_t flat) {
    switch (t.dtype()) {
        case DType::f32: {
            float f;
            std::memcpy(&f, t.data() + 4 * flat, 4);
            return f;
        }
        case DType::f16: case DType::bf16: {
            std::uint16_t b;
            std::memcpy(&b, t.data() + 2 * flat, 2);
            return t.dtype() == DType::f16 ? f16_bits_to_f64(b) : bf16_bits_to_f64(b);
        }
        default: return code_values(t.dtype())[code_at(t.data(), t.dtype(), flat)];
    }
}

// Row n's scales and zero points, one per group, as doubles (exact).
void row_params(const WeightView& W, std::size_t n, double* s, double* z) {
    for (std::size_t g = 0; g < W.groups; ++g) {
        s[g] = param_value(*W.scale, W.param(n, g));
        z[g] = W.zero ? param_value(*W.zero, W.param(n, g)) : 0.0;
    }
}

// ---- portable path: one row dequantised, then dot products -----------------------------------

// A row of A times a dequantised weight row, an f32 chain in k order.
float dot_in_order(const float* a, const float* row, std::size_t K) {
    float s = 0.0f;
    for (std::size_t k = 0; k < K; ++k) s += a[k] * row[k];
    return s;
}

void portable_rows(const float* A, std::size_t M, std::size_t lda, const WeightView& W, float* C, std::size_t ldc,
                   std::size_t n0, std::size_t n1) {
    static thread_local std::vector<float> row;
    row.resize(W.K);
    for (std::size_t n = n0; n < n1; ++n) {
        dequantize_rows(W, n, 1, row.data());
        for (std::size_t m = 0; m < M; ++m) C[m * ldc + n] = dot_in_order(A + m * lda, row.data(), W.K);
    }
}

// The decode kernels sum a group's (q - z) x, or code times x, and scale the sum once. That is
// the declared f32 chain wherever the sum is finite (compressed_kernels.hpp), but not where it is
// not: an infinite scale times a code equal to its zero point is 0 * Inf = NaN in the spec's
// W_f = (q - z) S, where s * sum gives an infinity; and codes times activations can pass f32's
// range where the dequantised products stay well within it (x ~ 1e37 against S ~ 1e-36). Those
// elements, found by their non-finite value, are computed again as the portable path computes
// every element: W_f rounded once to f32, then the products.
void redo_nonfinite(const float* A, std::size_t M, std::size_t lda, const WeightView& W, std::size_t N, float* C,
                    std::size_t ldc) {
    static thread_local std::vector<float> row;
    for (std::size_t n = 0; n < N; ++n) {
        bool any = false;
        for (std::size_t m = 0; m < M; ++m) any = any || !std::isfinite(C[m * ldc + n]);
        if (!any) continue;
        row.resize(W.K);
        dequantize_rows(W, n, 1, row.data());
        for (std::size_t m = 0; m < M; ++m)
            if (!std::isfinite(C[m * ldc + n])) C[m * ldc + n] = dot_in_order(A + m * lda, row.data(), W.K);
    }
}

// ---- AVX-512 decode kernels ------------------------------------------------------------------

// The 16 values of a 4-bit type as floats, for vpermps (which indexes by the low 4 bits of each lane).
MOE_AVX512 inline __m512 nibble_table(DType t) {
    alignas(64) float v[16];
    const auto& values = code_values(t);
    for (unsigned c = 0; c < 16; ++c) v[c] = static_cast<float>(values[c]);
    return _mm512_load_ps(v);
}

// 32 consecutive weights of a row from byte pointer p: lo and hi 16 each. 4-bit: lo = the even
// elements (low nibbles), hi = the odd ones; 8-bit: lo = elements 0-15, hi = 16-31. Over256: E4M3
// codes' values over 256, no NaN (e4m3_decode.hpp).
template <DType T, bool Over256 = false>
MOE_AVX512 __attribute__((always_inline)) inline void decode32(const unsigned char* p, __m512 table, __m512& lo, __m512& hi) {
    const auto load16 = [](const unsigned char* q) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)); };
    if constexpr (is_nibble(T)) {
        const __m512i b = _mm512_cvtepu8_epi32(load16(p));
        lo = _mm512_permutexvar_ps(b, table);
        hi = _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), table);
    } else if constexpr (T == DType::u8) {
        lo = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(load16(p)));
        hi = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(load16(p + 16)));
    } else if constexpr (T == DType::i8) {
        lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(load16(p)));
        hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(load16(p + 16)));
    } else if constexpr (T == DType::f8e5m2) {  // E5M2 is the upper byte of an IEEE half
        lo = _mm512_cvtph_ps(_mm256_slli_epi16(_mm256_cvtepu8_epi16(load16(p)), 8));
        hi = _mm512_cvtph_ps(_mm256_slli_epi16(_mm256_cvtepu8_epi16(load16(p + 16)), 8));
    } else if constexpr (Over256) {
        lo = e4m3_16_over_256(p);
        hi = e4m3_16_over_256(p + 16);
    } else {
        lo = e4m3_16(p);
        hi = e4m3_16(p + 16);
    }
}


// One group of row `row` (from element k0) against M rows of A: acc[m] += s * sum (q - z) x, the
// products summed in f32, then scaled once. CH: the group's 32-element chunks, a constant for the
// common group sizes (32, 64, 128) so that the loop unrolls, else the count at run time: 0 for
// short groups, kLongGroup for groups of 512 and more (per channel: K / 32 chunks). A long group
// with one or two rows of A goes to P chains of partial sums, chunk c to chain c % P, added at the
// group's end: in one chain every chunk's two multiply-adds wait on the previous chunk's (8 cycles
// of latency per 32 weights, a bound at T = 1: u8 per channel from L2 on one Zen 5 thread 20 ->
// 34 GB/s of codes). Short groups need no more chains: the next group's is independent.
constexpr int kLongGroup = -1;
constexpr std::size_t kLongGroupSize = 512;  // 16 chunks: every chain gets one at least

template <DType T, int M, bool ZP, int CH, bool Over256>
MOE_AVX512 inline void decode_group(const float* A, std::size_t lda, const unsigned char* row, std::size_t k0,
                                    std::size_t chunks, __m512 table, float s, float z, __m512 (&acc)[M]) {
    constexpr std::size_t chunk_bytes = is_nibble(T) ? 16 : 32;
    constexpr int P = CH == kLongGroup && M <= 2 ? 4 / M : 1;
    static_assert(kLongGroupSize / 32 >= 4, "a long group starts every chain");
    const std::size_t count = CH > 0 ? static_cast<std::size_t>(CH) : chunks;
    __m512 part[M][P];
    const __m512 zv = _mm512_set1_ps(z);
    // 4-bit types: the zero point folded into the group's value table (q - z for every code,
    // exact: small integers); 8-bit types subtract it after decoding.
    const __m512 values = ZP && is_nibble(T) ? _mm512_sub_ps(table, zv) : table;
    // Chunk c (elements k0 + 32c ...) into chain j; the chain's first chunk starts it.
    const auto chunk = [&](std::size_t c, int j, bool first) MOE_AVX512 __attribute__((always_inline)) {
        const std::size_t k = k0 + 32 * c;
        const unsigned char* bytes = row + k / 32 * chunk_bytes;
        // 8-bit codes: once per 64-byte line (the chunk that starts in it), as the dot kernels do,
        // the line 8 KB ahead into L2 and 2 KB ahead into L1 (u8 per channel on two threads: 36 ->
        // 46 GB/s of codes from DRAM). 4-bit codes take twice the work per byte here: their
        // stream keeps up without, and with it GPT-OSS u4 ran 0-10 % slower.
        if (!is_nibble(T) && (reinterpret_cast<std::uintptr_t>(bytes) & 63u) < chunk_bytes) {
            _mm_prefetch(reinterpret_cast<const char*>(bytes + 8192), _MM_HINT_T2);
            _mm_prefetch(reinterpret_cast<const char*>(bytes + 2048), _MM_HINT_T0);
        }
        __m512 lo, hi;
        decode32<T, Over256>(bytes, values, lo, hi);
        if constexpr (ZP && !is_nibble(T)) {
            lo = _mm512_sub_ps(lo, zv);  // exact: small integers
            hi = _mm512_sub_ps(hi, zv);
        }
#pragma GCC unroll 8
        for (int m = 0; m < M; ++m) {
            const float* a = A + static_cast<std::size_t>(m) * lda + k;
            const __m512 even = first ? _mm512_mul_ps(lo, _mm512_loadu_ps(a)) : _mm512_fmadd_ps(lo, _mm512_loadu_ps(a), part[m][j]);
            part[m][j] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(a + 16), even);
        }
    };
    if constexpr (P == 1) {
#pragma GCC unroll 4
        for (std::size_t c = 0; c < count; ++c) chunk(c, 0, c == 0);
    } else {
#pragma GCC unroll 4
        for (int j = 0; j < P; ++j) chunk(j, j, true);
        std::size_t c = P;
        for (; c + P <= count; c += P)
#pragma GCC unroll 4
            for (int j = 0; j < P; ++j) chunk(c + j, j, false);
#pragma GCC unroll 4
        for (int j = 0; j < P; ++j)
            if (c + j < count) chunk(c + j, j, false);
    }
    const __m512 sv = _mm512_set1_ps(s);
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m) {
        __m512 sum = part[m][0];
#pragma GCC unroll 4
        for (int j = 1; j < P; ++j) sum = _mm512_add_ps(sum, part[m][j]);
        if constexpr (Over256) sum = _mm512_mul_ps(sum, _mm512_set1_ps(256.0f));  // exact, as the codes' values
        acc[m] = _mm512_fmadd_ps(sv, sum, acc[m]);
    }
}

// M rows of A (4-bit types: each 32-element chunk deinterleaved, evens then odds) against rows
// [n0, n1) of W. Groups alternate between two accumulators per row of A (kept in registers: the
// groups go in pairs) to hide the FMA latency.
template <DType T, int M, bool ZP, int CH, bool Over256>
MOE_AVX512 void decode_rows_of(const float* A, std::size_t lda, const WeightView& W, float* C, std::size_t ldc,
                               std::size_t n0, std::size_t n1) {
    static thread_local std::vector<float> s, z;
    s.resize(W.groups);
    z.resize(W.groups, 0.0f);
    const std::size_t chunks = W.group_size / 32, G = W.groups, gs = W.group_size;
    const __m512 table = is_nibble(T) ? nibble_table(T) : _mm512_setzero_ps();
    for (std::size_t n = n0; n < n1; ++n) {
        const unsigned char* row = W.data + n * W.row_bytes();
        if constexpr (Over256)
            if (e4m3_row_has_nan(row, W.K)) {  // the decoded values lack it: NaN, done again by redo_nonfinite
                for (int m = 0; m < M; ++m)
                    C[static_cast<std::size_t>(m) * ldc + n] = std::numeric_limits<float>::quiet_NaN();
                continue;
            }
        params_avx512(*W.scale, W.param(n, 0), G, s.data());
        if constexpr (ZP) params_avx512(*W.zero, W.param(n, 0), G, z.data());
        __m512 even[M], odd[M];
#pragma GCC unroll 8
        for (int m = 0; m < M; ++m) even[m] = odd[m] = _mm512_setzero_ps();
        std::size_t g = 0;
        for (; g + 1 < G; g += 2) {
            decode_group<T, M, ZP, CH, Over256>(A, lda, row, g * gs, chunks, table, s[g], z[g], even);
            decode_group<T, M, ZP, CH, Over256>(A, lda, row, (g + 1) * gs, chunks, table, s[g + 1], z[g + 1], odd);
        }
        if (g < G) decode_group<T, M, ZP, CH, Over256>(A, lda, row, g * gs, chunks, table, s[g], z[g], even);
#pragma GCC unroll 8
        for (int m = 0; m < M; ++m)
            C[static_cast<std::size_t>(m) * ldc + n] = _mm512_reduce_add_ps(_mm512_add_ps(even[m], odd[m]));
    }
}

template <DType T, int M, bool ZP, bool Over256>
void decode_kernel(const float* A, std::size_t lda, const WeightView& W, float* C, std::size_t ldc, std::size_t n0,
                   std::size_t n1) {
    switch (W.group_size) {
        case 32: return decode_rows_of<T, M, ZP, 1, Over256>(A, lda, W, C, ldc, n0, n1);
        case 64: return decode_rows_of<T, M, ZP, 2, Over256>(A, lda, W, C, ldc, n0, n1);
        case 128: return decode_rows_of<T, M, ZP, 4, Over256>(A, lda, W, C, ldc, n0, n1);
        default:
            if (W.group_size >= kLongGroupSize)
                return decode_rows_of<T, M, ZP, kLongGroup, Over256>(A, lda, W, C, ldc, n0, n1);
            return decode_rows_of<T, M, ZP, 0, Over256>(A, lda, W, C, ldc, n0, n1);
    }
}

template <DType T, bool ZP, bool Over256 = false>
void dispatch_m(const float* A, std::size_t M, std::size_t lda, const WeightView& W, float* C, std::size_t ldc,
                std::size_t n0, std::size_t n1) {
    switch (M) {
        case 1: return decode_kernel<T, 1, ZP, Over256>(A, lda, W, C, ldc, n0, n1);
        case 2: return decode_kernel<T, 2, ZP, Over256>(A, lda, W, C, ldc, n0, n1);
        case 3: return decode_kernel<T, 3, ZP, Over256>(A, lda, W, C, ldc, n0, n1);
        case 4: return decode_kernel<T, 4, ZP, Over256>(A, lda, W, C, ldc, n0, n1);
        case 5: return decode_kernel<T, 5, ZP, Over256>(A, lda, W, C, ldc, n0, n1);
        case 6: return decode_kernel<T, 6, ZP, Over256>(A, lda, W, C, ldc, n0, n1);
        case 7: return decode_kernel<T, 7, ZP, Over256>(A, lda, W, C, ldc, n0, n1);
        default: return decode_kernel<T, 8, ZP, Over256>(A, lda, W, C, ldc, n0, n1);
    }
}

template <DType T>
void dispatch_zp(const float* A, std::size_t M, std::size_t lda, const WeightView& W, float* C, std::size_t ldc,
                 std::size_t n0, std::size_t n1) {
    if (W.zero) dispatch_m<T, true>(A, M, lda, W, C, ldc, n0, n1);
    else dispatch_m<T, false>(A, M, lda, W, C, ldc, n0, n1);
}

void decode_rows(const float* A, std::size_t M, std::size_t lda, const WeightView& W, float* C, std::size_t ldc,
                 std::size_t n0, std::size_t n1, bool e4m3_over_256) {
    switch (W.dtype) {
        case DType::u4: return dispatch_zp<DType::u4>(A, M, lda, W, C, ldc, n0, n1);
        case DType::i4: return dispatch_zp<DType::i4>(A, M, lda, W, C, ldc, n0, n1);
        case DType::f4e2m1: return dispatch_m<DType::f4e2m1, false>(A, M, lda, W, C, ldc, n0, n1);
        case DType::u8: return dispatch_zp<DType::u8>(A, M, lda, W, C, ldc, n0, n1);
        case DType::i8: return dispatch_zp<DType::i8>(A, M, lda, W, C, ldc, n0, n1);
        case DType::f8e4m3:
            return e4m3_over_256 ? dispatch_m<DType::f8e4m3, false, true>(A, M, lda, W, C, ldc, n0, n1)
                                 : dispatch_m<DType::f8e4m3, false>(A, M, lda, W, C, ldc, n0, n1);
        default: return dispatch_m<DType::f8e5m2, false>(A, M, lda, W, C, ldc, n0, n1);
    }
}

}  // namespace

// The value of every code of a weight type (4-bit types: indexed by the nibble), from the spec's
// decoders: built once per type.
const std::array<double, 256>& code_values(DType t) {
    static const auto build = [](DType type) {
        std::array<double, 256> v{};
        Tensor one(type, {1});
        for (unsigned c = 0; c < 256; ++c) {
            one.data()[0] = static_cast<unsigned char>(dtype_bits(type) == 4 ? (c & 0x0fu) : c);
            v[c] = one.get(0);
        }
        return v;
    };
    static const std::array<double, 256> u8 = build(DType::u8), i8 = build(DType::i8), u4 = build(DType::u4),
                                         i4 = build(DType::i4), e2m1 = build(DType::f4e2m1), e4m3 = build(DType::f8e4m3),
                                         e5m2 = build(DType::f8e5m2), e8m0 = build(DType::f8e8m0);
    switch (t) {
        case DType::u8: return u8;
        case DType::i8: return i8;
        case DType::u4: return u4;
        case DType::i4: return i4;
        case DType::f4e2m1: return e2m1;
        case DType::f8e4m3: return e4m3;
        case DType::f8e5m2: return e5m2;
        default: return e8m0;
    }
}

// A row's scales or zero points (count from flat index base) as floats, 16 at a time: a decode
// step reads 90 of each per GPT-OSS row, and converting them one by one costs as much as the row's
// 2880 weights.
MOE_AVX512 void params_avx512(const Tensor& t, std::size_t base, std::size_t count, float* out) {
    const unsigned char* d = t.data();
    const DType type = t.dtype();
    if (type == DType::u4 || type == DType::i4) {  // nibbles: two per byte, a table of pairs per byte
        using Pairs = std::array<std::array<float, 2>, 256>;
        static const Pairs pairs[2] = {[] {
                                           Pairs p{};
                                           for (unsigned b = 0; b < 256; ++b)
                                               p[b] = {static_cast<float>(b & 15u), static_cast<float>(b >> 4)};
                                           return p;
                                       }(),
                                       [] {  // i4: nibbles of 8 and more are negative
                                           Pairs p{};
                                           const auto v = [](unsigned n) { return static_cast<float>(n >= 8 ? int(n) - 16 : int(n)); };
                                           for (unsigned b = 0; b < 256; ++b) p[b] = {v(b & 15u), v(b >> 4)};
                                           return p;
                                       }()};
        const Pairs& table = pairs[type == DType::i4 ? 1 : 0];
        std::size_t g = 0;
        if (base % 2 == 1 && count > 0) out[g++] = table[d[base / 2]][1];
        for (; g + 1 < count; g += 2) {
            const auto& pair = table[d[(base + g) / 2]];
            out[g] = pair[0];
            out[g + 1] = pair[1];
        }
        if (g < count) out[g] = table[d[(base + g) / 2]][0];
        return;
    }
    if (type == DType::f32) {
        std::memcpy(out, d + 4 * base, 4 * count);
        return;
    }
    for (std::size_t g = 0; g < count; g += 16) {
        const __mmask16 m = first_lanes<__mmask16>(count - g);
        __m512 v;
        if (type == DType::f16 || type == DType::bf16) {
            const __m256i h = _mm256_maskz_loadu_epi16(m, d + 2 * (base + g));
            v = type == DType::f16 ? _mm512_cvtph_ps(h) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
        } else {
            const __m512i c = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, d + base + g));
            if (type == DType::u8) {
                v = _mm512_cvtepi32_ps(c);
            } else if (type == DType::i8) {
                v = _mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(c, 24), 24));
            } else {
                v = e8m0_as_f32(c);
            }
        }
        _mm512_mask_storeu_ps(out + g, m, v);
    }
}

bool compressed_uses_decode_kernels(const WeightView& W) {
    return cpu_has_avx512() && W.group_size % 32 == 0 && W.K % 32 == 0;
}

template <class S>
void dequantize_rows(const WeightView& W, std::size_t n0, std::size_t rows, S* out) {
    std::vector<double> s(W.groups), z(W.groups);
    const auto& values = code_values(W.dtype);
    for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t n = n0 + r;
        row_params(W, n, s.data(), z.data());
        for (std::size_t k = 0; k < W.K; ++k) {
            const std::size_t g = k / W.group_size;
            // Exact in f64 (spec/compressed.md, section 1), then one rounding to S.
            out[r * W.K + k] = static_cast<S>((values[code_at(W.data, W.dtype, n * W.K + k)] - z[g]) * s[g]);
        }
    }
}

template void dequantize_rows<float>(const WeightView&, std::size_t, std::size_t, float*);
template void dequantize_rows<double>(const WeightView&, std::size_t, std::size_t, double*);

void dequantize_expert_f32(const WeightView& W, float* out, int threads) {
    constexpr std::size_t kRows = 64;
    const long long blocks = static_cast<long long>((W.N + kRows - 1) / kRows);
    const bool parallel = threads > 1 && blocks > 1 && W.N * W.K >= kMinParallelWork;
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel)
    for (long long b = 0; b < blocks; ++b) {
        const std::size_t n0 = static_cast<std::size_t>(b) * kRows;
        dequantize_rows(W, n0, std::min(kRows, W.N - n0), out + n0 * W.K);
    }
}

void compressed_gemm(const float* A, std::size_t M, std::size_t lda, const WeightView& W, std::size_t N, float* C,
                     std::size_t ldc, int threads, DecodeProducts products) {
    if (M == 0 || N == 0) return;
    const bool fast = compressed_uses_decode_kernels(W);
    // 4-bit weights: the int8 dot kernels where they are asked for (or chosen: cpu_features.hpp)
    // and A's blocks lie on their grid, else the bf16 ones on bf16 activations (bf16 data); A
    // arranged once per call.
    static thread_local IntActivations int_x;
    const bool int_dot = fast && arrange_for_int_dot(A, M, lda, W, products, int_x);
    const IntActivations* ints = &int_x;  // the workers' own int_x would be another thread's
    const bool dot = fast && !int_dot && compressed_uses_bf16_dot(A, M, lda, W);
    // E4M3: the codes' values over 256, half the work, where that changes no rounding.
    const bool e4m3_over_256 = fast && W.dtype == DType::f8e4m3 && e4m3_over_256_rows_ok(A, M, lda, W.K);
    static thread_local CacheLineVector<std::uint16_t> arranged;  // this thread's: workers use x, not theirs
    const std::uint16_t* x = nullptr;
    if (dot) {
        arranged.resize(M * ((W.K + kDotChunk - 1) / kDotChunk) * kDotChunk);
        arrange_bf16(A, M, lda, W.K, arranged.data());
        x = arranged.data();
    }
    // 4-bit types: each 32-element chunk of A's rows as its 16 even then 16 odd elements, the
    // order the decoded low and high nibbles come in. Once per call, for every thread.
    static thread_local CacheLineVector<float> deinterleaved;
    const float* a = A;
    std::size_t a_stride = lda;
    if (fast && !dot && !int_dot && is_nibble(W.dtype)) {
        deinterleaved.resize(M * W.K);
        for (std::size_t m = 0; m < M; ++m)
            for (std::size_t k0 = 0; k0 < W.K; k0 += 32)
                for (std::size_t j = 0; j < 16; ++j) {
                    deinterleaved[m * W.K + k0 + j] = A[m * lda + k0 + 2 * j];
                    deinterleaved[m * W.K + k0 + 16 + j] = A[m * lda + k0 + 2 * j + 1];
                }
        a = deinterleaved.data();
        a_stride = W.K;
    }
    // Work items of 32 weight rows; each thread takes one contiguous run of them and streams its
    // rows' bytes once, in memory order: its prefetches run ahead into its own next rows (with items
    // dealt out one at a time they ran into the other thread's, and every item started cold).
    constexpr std::size_t kRowsPerItem = 32;
    const long long items = static_cast<long long>((N + kRowsPerItem - 1) / kRowsPerItem);
    const bool parallel = threads > 1 && items > 1 && M * N * W.K >= kMinParallelWork;
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel)
    for (long long it = 0; it < items; ++it) {
        const std::size_t n0 = static_cast<std::size_t>(it) * kRowsPerItem, n1 = std::min(N, n0 + kRowsPerItem);
        if (int_dot) int_dot_rows(*ints, M, W, C, ldc, n0, n1);
        else if (dot) dot_rows(x, M, W, C, ldc, n0, n1);
        else if (fast) decode_rows(a, M, a_stride, W, C, ldc, n0, n1, e4m3_over_256);
        else portable_rows(A, M, lda, W, C, ldc, n0, n1);
    }
    if (fast) redo_nonfinite(A, M, lda, W, N, C, ldc);
}

}  // namespace moe::backends::cpu
