// The dot-product decode kernels for 4-bit weights (compressed_dot_kernels.hpp), on bf16
// activations (vdpbf16ps) or on activations on a per-block grid (vpdpbusd): one loop over rows,
// steps and chunks for both product engines. What each engine does with a chunk, and why its
// result is within an f32 chain's bound: dot_chunk_decode.hpp.
#include "compressed_dot_kernels.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cache_line_vector.hpp"
#include "compressed_kernels.hpp"
#include "compressed_values.hpp"
#include "cpu_features.hpp"
#include "dot_param_tables.hpp"
#include "dot_chunk_decode.hpp"
#include "int_dot_activations.hpp"

namespace moe::backends::cpu {

// Each chunk's load is preceded by two software prefetches (into the next rows past a row's end):
// the line 8 KB ahead into L2 and the line 2 KB ahead into L1. One thread's stream from DRAM, left
// to the hardware prefetchers, runs at about 15 GB/s; a single L1 prefetch 8 KB ahead holds no
// more lines in flight than L1 has miss buffers, and two threads then moved 19 GB/s of codes on
// a Zen 4 host whose read probe gave 34 GB/s; the far L2 prefetch and the near L1 one, 25 GB/s.
// 12 KB and 4 KB did as well in a standalone loop and worse in moe-bench (docs/compressed.md).
constexpr std::size_t kDotPrefetchL2 = 8192, kDotPrefetchL1 = 2048;

// Where a kernel reads the block scales: a table of f32 built per work item, or (groups of 32) the
// stored f16 or E8M0 values themselves.
enum class ScaleSource { table, f16, e8m0 };

// Where R consecutive weight rows' bytes, block scales and zero points are; `wide`: groups span
// whole chunks (a chunk's four block scales are one). With groups of 32 and f16 or E8M0 scales the
// kernel reads them as stored (`half_scales`, `e8m0_scales`), and nibble zero points too
// (`packed_zeros`, from nibble `zero_odd` of the first byte): no per-item conversion pass, which
// cost about an eighth of a u4 decode streaming from memory and a fifth of an MXFP4 one.
template <int R>
struct DotRows {
    const unsigned char* codes[R];
    const float* scales[R];
    const unsigned char* zeros[R];  // block_bytes
    const std::uint16_t* half_scales[R];
    const unsigned char* e8m0_scales[R];
    const unsigned char* packed_zeros[R];
    unsigned zero_odd[R];
    bool wide;
};

// The activations each engine reads: the bf16 kernels' arranged words, the int8 kernels' digits.
template <Products P>
using DotInput = std::conditional_t<P == Products::bf16, const std::uint16_t*, const IntActivations*>;

// R weight rows' dot products with M rows of X into sums. The full chunks run without a branch, U
// at a time for each of the R rows (their product chains interleaved: one chain alone waits on
// the product instruction's latency, and the R rows share each load of X; chunk u of a step goes to
// accumulator u % 2 where there are fewer than four chains); the row's last chunks are one step,
// the partial one loaded under a mask (zero codes, against zero activations).
//
// Inlined into its caller's loop over rows: called, it reloaded the decode constants and passed
// its sums back through memory every row, 0.3-0.5 cycles a chunk of u4 and MXFP4 from L2
// (docs/compressed.md).
template <Products P, DType T, int M, ChunkZeros Z, int R, ScaleSource S>
MOE_DOTLOOP inline __attribute__((always_inline)) void dot_row(DotInput<P> X, std::size_t chunks, std::size_t full, std::size_t tail_k,
                                const DotRows<R>& rows, const DotConstants& k, __m512 (&sums)[R][M][2]) {
    // The accumulators in registers for the whole row (the caller's array, in memory, put a store
    // and a reload into every multiply-add's chain). Two a chain only where there are fewer than
    // four chains: two weight rows against two rows of A with two each spilled two of them to
    // memory, the same store and reload (u4 15 % slower).
    constexpr int kAccs = R * M >= 4 ? 1 : 2;
    __m512 acc[R][M][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < M; ++m) acc[r][m][0] = acc[r][m][1] = _mm512_setzero_ps();
    constexpr bool kInt = P == Products::int8;
    constexpr bool kStored = S != ScaleSource::table;
    constexpr bool kUnitsOnScales = kInt && S == ScaleSource::f16;  // int8 on f16 scales: see above
    // The row's last chunk is partial where tail_k > 0: its codes and the activations past K are
    // zero (a masked load; X is arranged in whole chunks).
    const auto last_chunk_words = static_cast<__mmask32>(tail_k ? (1ull << (tail_k / 4)) - 1u : ~0u);
    const unsigned last_chunk_blocks = tail_k ? static_cast<unsigned>((tail_k + 31) / 32) : 4u;
    // A step's 16 zero-point nibbles of row r, broadcast by the loads themselves (built in a
    // general register, with a shift for an odd first nibble, and moved over, the word held each
    // step's chain up by the move's latency: 4 % of u4's decode): blocks 0-2 of each chunk from the
    // step's first byte on, block 3 from the byte `odd` on (dot_constants). `blocks`: the step's
    // blocks where it is masked (fewer than four chunks, or the row's last), its bytes only read.
    [[maybe_unused]] const auto zero_words = [&](int r, std::size_t c0, bool masked, unsigned blocks)
        MOE_DOTLOOP __attribute__((always_inline)) {
        const unsigned char* zp = rows.packed_zeros[r] + 2 * c0;
        const unsigned odd = rows.zero_odd[r], bytes = (odd + blocks + 1) / 2;
        const auto word = [&](const unsigned char* p, unsigned n) MOE_DOTLOOP {
            return masked ? _mm_maskz_loadu_epi8(static_cast<__mmask16>((1u << n) - 1u), p)
                          : _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
        };
        return _mm512_mask_broadcastq_epi64(_mm512_broadcastq_epi64(word(zp, std::min(bytes, 8u))),
                                            static_cast<__mmask8>(0xc0), word(zp + odd, bytes - odd));
    };
    // One row of A (whole steps of four chunks): each full step's zero-point words are loaded
    // during the step before (the row's first before its loop), so that no chunk's decode waits on
    // their loads: u4 decoded 8.0-8.2 cycles a chunk from L2 with them loaded in the step, 7.7-7.9
    // this way. The scales carried as well gained nothing; the four chunks' zero bytes spread a
    // step ahead, held in four more registers, lost it all (docs/compressed.md).
    constexpr bool kCarryZeros = Z == ChunkZeros::packed_nibbles && R == 1 && M == 1;
    [[maybe_unused]] __m512i next_zeros[R];
    // The next full step's, or (past the last full step) the last full step's again, unused.
    [[maybe_unused]] const auto carry_zeros = [&](std::size_t c0) MOE_DOTLOOP __attribute__((always_inline)) {
        for (int r = 0; r < R; ++r) next_zeros[r] = zero_words(r, std::min(c0, full - 4), false, 16u);
    };
    // kLast: the row's last U chunks, the last of them the partial one if any.
    const auto step = [&](std::size_t c0, auto units, auto is_last) MOE_DOTLOOP __attribute__((always_inline)) {
        constexpr int U = decltype(units)::value;
        constexpr bool kLast = decltype(is_last)::value;
        __m512i v[R][U][P == Products::bf16 ? 4 : 2];
        __m512 sv[R][U];
        // A whole step of four chunks (one row of A): its 16 block scales by one load (and one
        // conversion, f16 as stored) and its 16 stored zero-point nibbles by one 64-bit word, where
        // each chunk took a load, a conversion and a masked load of its own; the chunks' blocks all
        // lie inside the row, so every byte read is the row's own. The kernel is bound by its
        // arithmetic on the hosts measured: 3-9 % more codes a second (docs/compressed.md). Not
        // for the bf16 engine on scales from the item's table (MXFP4, other group sizes): there the
        // step's four permutes cost MXFP4 3-5 % of the decode layer, 10-15 % of one thread's
        // stream from memory, on the Zen 5 host (docs/compressed.md, "Decode products by
        // processor").
        //
        // With scales stored f16, every step reads its scales and zero points at once: a step of
        // fewer than four chunks (two or more rows of A) and the row's last step (one row of A: up
        // to three whole chunks and the partial one) under a mask of their own blocks. As single
        // chunks, each with loads, a conversion and a permute of its own, the three chunks past a
        // GPT-OSS row's 20 (K = 2880) took as long as eight of a step's; u4 with zero points
        // decodes 10 % more codes a second from cache at M = 1 and 2 (docs/compressed.md).
        constexpr bool kStep = (U == 4 && !kLast && P == Products::int8) || kStored;
        constexpr bool kMasked = kLast || U < 4;
        [[maybe_unused]] const unsigned step_blocks = kLast ? 4 * (U - 1) + last_chunk_blocks : 4u * U;
        [[maybe_unused]] const auto step_mask = static_cast<__mmask16>((1u << step_blocks) - 1u);
        [[maybe_unused]] __m512 step_scales[R];
        [[maybe_unused]] __m512i step_zeros[R];
        if constexpr (kStep) {
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
                if constexpr (S == ScaleSource::f16) {
                    const std::uint16_t* halves = rows.half_scales[r] + 4 * c0;
                    const __m256i h = kMasked ? _mm256_maskz_loadu_epi16(step_mask, halves)
                                              : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(halves));
                    step_scales[r] = _mm512_cvtph_ps(h);  // exact
                } else if constexpr (S == ScaleSource::e8m0) {
                    const unsigned char* e = rows.e8m0_scales[r] + 4 * c0;
                    const __m128i b = kMasked ? _mm_maskz_loadu_epi8(step_mask, e)
                                              : _mm_loadu_si128(reinterpret_cast<const __m128i*>(e));
                    step_scales[r] = e8m0_as_f32(_mm512_cvtepu8_epi32(b));  // exact, 0 and 255 too
                } else {
                    step_scales[r] = rows.wide ? _mm512_setzero_ps() : _mm512_loadu_ps(rows.scales[r] + 4 * c0);
                }
                if constexpr (kUnitsOnScales) {
                    const float* units = X->block_units.data() + 4 * c0;
                    step_scales[r] = _mm512_mul_ps(
                        step_scales[r], kMasked ? _mm512_maskz_loadu_ps(step_mask, units) : _mm512_loadu_ps(units));
                }
                if constexpr (Z == ChunkZeros::packed_nibbles) {
                    if constexpr (kCarryZeros && !kMasked) step_zeros[r] = next_zeros[r];
                    else step_zeros[r] = zero_words(r, c0, kMasked, step_blocks);
                }
            }
            if constexpr (kCarryZeros && !kMasked) carry_zeros(c0 + 4);
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
            for (int u = 0; u < U; ++u) {
                const std::size_t c = c0 + u;
                const unsigned char* row = rows.codes[r];
                __m512i w, zv = _mm512_setzero_si512();
                const bool last_chunk = kLast && u == U - 1;  // unrolled: known at compile time
                if (last_chunk) {
                    w = _mm512_maskz_loadu_epi16(last_chunk_words, row + 64 * c);
                } else {
                    _mm_prefetch(reinterpret_cast<const char*>(row + 64 * c + kDotPrefetchL2), _MM_HINT_T2);
                    _mm_prefetch(reinterpret_cast<const char*>(row + 64 * c + kDotPrefetchL1), _MM_HINT_T0);
                    w = _mm512_loadu_si512(row + 64 * c);
                }
                // The partial chunk's blocks past K meet zero codes against zero activations.
                if constexpr (Z == ChunkZeros::block_bytes) zv = chunk_zeros(rows.zeros[r] + 4 * c, k);
                if constexpr (Z == ChunkZeros::packed_nibbles) {  // u4 as stored; i4 biased by 8, as its codes are
                    zv = _mm512_and_si512(
                        _mm512_multishift_epi64_epi8(k.step_select[rows.zero_odd[r]][u], step_zeros[r]), k.low_nibbles);
                    if constexpr (T == DType::i4) zv = _mm512_xor_si512(zv, _mm512_set1_epi8(8));
                }
                if constexpr (kInt) chunk_bytes<T, Z>(w, zv, k, v[r][u]);
                else chunk_values<T, Z>(w, zv, k, v[r][u]);
                if (kStep && (kStored || !rows.wide)) {
                    sv[r][u] = _mm512_permutexvar_ps(k.step_lanes[u], step_scales[r]);
                } else if (!last_chunk && rows.wide) {
                    sv[r][u] = _mm512_set1_ps(rows.scales[r][4 * c]);  // a load, no permute
                } else {
                    // The partial chunk's blocks past K have no scale (and meet zero codes): zero.
                    const float* s4p = rows.scales[r] + 4 * c;
                    const auto s4mask = static_cast<__mmask8>((1u << last_chunk_blocks) - 1u);
                    const __m128 s4 = last_chunk ? _mm_maskz_loadu_ps(s4mask, s4p) : _mm_loadu_ps(s4p);
                    sv[r][u] = _mm512_permutexvar_ps(k.lane_block, _mm512_castps128_ps512(s4));
                }
            }
#pragma GCC unroll 8
        for (int m = 0; m < M; ++m) {
#pragma GCC unroll 4
            for (int u = 0; u < U; ++u) {
                if constexpr (kInt) {
                    const IntChunk& x = X->rows[static_cast<std::size_t>(m) * chunks + c0 + u];
                    [[maybe_unused]] const __m512 lane_units =
                        kUnitsOnScales ? _mm512_setzero_ps() : _mm512_loadu_ps(X->lane_units.data() + 16 * (c0 + u));
#pragma GCC unroll 4
                    for (int r = 0; r < R; ++r) {
                        __m512 p = _mm512_cvtepi32_ps(digit_sum(v[r][u], x.digits, x.bias));  // the one rounding
                        if constexpr (!kUnitsOnScales) p = _mm512_mul_ps(p, lane_units);  // exact
                        acc[r][m][u % kAccs] = _mm512_fmadd_ps(p, sv[r][u], acc[r][m][u % kAccs]);
                    }
                } else {
                    const std::uint16_t* x = X + (static_cast<std::size_t>(m) * chunks + c0) * kDotChunk;
                    __m512i xv[4];
#pragma GCC unroll 4
                    for (int j = 0; j < 4; ++j) xv[j] = _mm512_loadu_si512(x + u * kDotChunk + 32 * j);
#pragma GCC unroll 4
                    for (int r = 0; r < R; ++r) {
                        __m512 p = _mm512_dpbf16_ps(_mm512_setzero_ps(), (__m512bh)v[r][u][0], (__m512bh)xv[0]);
#pragma GCC unroll 4
                        for (int j = 1; j < 4; ++j) p = _mm512_dpbf16_ps(p, (__m512bh)v[r][u][j], (__m512bh)xv[j]);
                        acc[r][m][u % kAccs] = _mm512_fmadd_ps(p, sv[r][u], acc[r][m][u % kAccs]);
                    }
                }
            }
        }
    };
    constexpr int kUnroll = R == 2 ? 2 : M == 1 ? 4 : M <= 3 ? 2 : 1;
    std::size_t c = 0;
    if constexpr (kCarryZeros) if (full >= 4) carry_zeros(0);
    for (; c + kUnroll <= full; c += kUnroll)
        step(c, std::integral_constant<int, kUnroll>{}, std::false_type{});
    if constexpr (kUnroll == 4) {
        switch (chunks - c) {  // the row's last chunks, one step
            case 1: step(c, std::integral_constant<int, 1>{}, std::true_type{}); break;
            case 2: step(c, std::integral_constant<int, 2>{}, std::true_type{}); break;
            case 3: step(c, std::integral_constant<int, 3>{}, std::true_type{}); break;
            case 4: step(c, std::integral_constant<int, 4>{}, std::true_type{}); break;
            default: break;
        }
    } else {
        // Two or more rows of A: single chunks (as one step, MXFP4 and u4 without zero points
        // decoded 6-8 % slower at M = 2 on the Zen 5 host).
        for (; c < full; ++c) step(c, std::integral_constant<int, 1>{}, std::false_type{});
        if (full < chunks) step(full, std::integral_constant<int, 1>{}, std::true_type{});
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < M; ++m) {
            sums[r][m][0] = acc[r][m][0];
            sums[r][m][1] = acc[r][m][1];
        }
}

template <Products P, DType T, int M, bool ZP>
MOE_DOTLOOP void dot_rows_of(DotInput<P> X, const WeightView& W, float* C, std::size_t ldc, std::size_t n0,
                             std::size_t n1) {
    const std::size_t G = W.groups, gs = W.group_size, per_group = gs / 32;
    const std::size_t chunks = (W.K + kDotChunk - 1) / kDotChunk, full = W.K / kDotChunk;
    // Groups of 32 with f16 scales (and zero points, if any, as nibbles of the weight's type), or
    // with E8M0 scales and no zero points (MXFP4): the kernel reads them as stored.
    const DType scale_type = W.scale->dtype();
    const ScaleSource source = per_group != 1 ? ScaleSource::table
                               : scale_type == DType::f16 && (!ZP || W.zero->dtype() == T) ? ScaleSource::f16
                               : scale_type == DType::f8e8m0 && !ZP ? ScaleSource::e8m0
                                                                    : ScaleSource::table;
    const bool stored = source != ScaleSource::table;
    const std::size_t scale_bytes = storage_bytes(scale_type, 1);
    // The next rows' scales and zero points (the thread's next item: threads take contiguous
    // runs of items) requested now, so that converting them below does not wait on memory.
    const auto prefetch_params = [&](const Tensor& t) {
        const std::size_t first = storage_bytes(t.dtype(), W.param(n1, 0)),
                          last = std::min(t.nbytes(), storage_bytes(t.dtype(), W.param(n1, 0) + (n1 - n0) * G));
        for (std::size_t b = first; b < last; b += 64)
            _mm_prefetch(reinterpret_cast<const char*>(t.data() + b), _MM_HINT_T0);
    };
    if (n1 < W.N && W.scale_rows != 1 && !stored) {
        prefetch_params(*W.scale);
        if constexpr (ZP) prefetch_params(*W.zero);
    }
    // Per 32-element block of each row: its group's scale (and zero point), K / 32 a row, for
    // every row of the item at once (one row when every row shares it). Built before the rows
    // are read: read back right after they are stored, the loads would wait on the stores (a
    // vector load does not forward from narrower stores).
    static thread_local std::vector<float> s, sb;
    static thread_local std::vector<unsigned char> zg, zb;
    const std::size_t stride = W.K / 32, param_rows = W.scale_rows == 1 ? 1 : n1 - n0,
                      params = param_rows * G;
    const auto row_offset = [&](std::size_t n) { return W.scale_rows == 1 ? 0 : (n - n0) * stride; };
    // Groups of 32 (one block a group): converted straight into the block tables.
    const bool per_block = per_group == 1;
    if (!stored) {
        s.resize(params + 16);
        sb.resize(params * per_group);
        params_avx512(*W.scale, W.param(n0, 0), params, per_block ? sb.data() : s.data());  // rows' groups adjacent
        if (!per_block) repeat_floats(s.data(), params, per_group, sb.data());
    }
    if constexpr (ZP) if (!stored) {
        // One byte per group (i4: z + 8, as the codes are biased), then per block. The table is
        // read 8 bytes at a time from a chunk's first block: padded (the values past K meet zero
        // codes against zero activations).
        constexpr unsigned char kBias = T == DType::i4 ? 8 : 0;
        zg.resize(params + 64);
        zb.assign(params * per_group + 8, 0);
        unsigned char* group_bytes = per_block ? zb.data() : zg.data();
        const std::size_t first = W.param(n0, 0);
        if (W.zero->dtype() == T && first % 2 == 0 && params % 2 == 0) {
            expand_nibbles(W.zero->data() + first / 2, params / 2, kBias, group_bytes);
        } else {
            params_avx512(*W.zero, first, params, s.data());  // the scales are in sb by now
            bytes_from_floats(s.data(), params, kBias, group_bytes);
        }
        if (!per_block) repeat_bytes(zg.data(), params, per_group, zb.data());
    }
    DotConstants k = dot_constants(dot_table<T, ZP>());
    if constexpr (P == Products::int8 && !ZP) k.value_table = int_value_table<T>();
    const std::size_t tail_k = W.K % kDotChunk;
    // Two weight rows at a time for two rows of A (they share each load of X), else one: with one
    // row of A, four weight rows side by side (the earlier choice, faster with the codes in L2)
    // are four interleaved streams that DRAM fed at 26-34 GB/s of codes on two threads, where one
    // row at a time streams at 37-43 (a standalone loop, the same process; docs/compressed.md).
    const std::size_t rows_ahead = kDotPrefetchL2 / W.row_bytes();  // rows the codes' L2 prefetch runs ahead
    // Each row's 16 lane sums, added across after the last row: a row's sum right after its last
    // product waited on the whole multiply-add chain, and the next row's loads with it (u4 and
    // MXFP4 0.2-0.35 cycles a chunk from L2).
    static thread_local CacheLineVector<float> lanes;
    lanes.resize(16 * M * (n1 - n0));
    const auto rows_from = [&](std::size_t n, auto count) MOE_DOTLOOP {
        constexpr int R = decltype(count)::value;
        DotRows<R> rows{};
        rows.wide = gs % kDotChunk == 0;
        if (stored) {
            // The scales and zero points of the rows about as far ahead as the codes' L2 prefetch
            // (kDotPrefetchL2 bytes): streams an eighth and a thirty-second as fast as the codes,
            // which the hardware prefetchers leave alone (without these prefetches the kernel
            // waited on each new line: u4 streamed at 24-33 GB/s of codes, slower than with the
            // conversion passes).
            const std::size_t ahead = std::min(W.N - 1, n + R + rows_ahead), p = W.param(ahead, 0);
            const unsigned char* sp = W.scale->data() + scale_bytes * p;
            for (std::size_t b = 0; b < scale_bytes * G * R + 64; b += 64)
                _mm_prefetch(reinterpret_cast<const char*>(sp + b), _MM_HINT_T0);
            if constexpr (ZP) _mm_prefetch(reinterpret_cast<const char*>(W.zero->data() + p / 2), _MM_HINT_T0);
        }
        for (int r = 0; r < R; ++r) {
            rows.codes[r] = W.data + (n + r) * W.row_bytes();
            if (stored) {
                const std::size_t p = W.param(n + r, 0);
                rows.half_scales[r] = reinterpret_cast<const std::uint16_t*>(W.scale->data()) + p;
                rows.e8m0_scales[r] = W.scale->data() + p;
                if constexpr (ZP) {
                    rows.packed_zeros[r] = W.zero->data() + p / 2;
                    rows.zero_odd[r] = static_cast<unsigned>(p % 2);
                }
            } else {
                rows.scales[r] = sb.data() + row_offset(n + r);
                if constexpr (ZP) rows.zeros[r] = zb.data() + row_offset(n + r);
            }
        }
        __m512 acc[R][M][2];
        if (source == ScaleSource::f16)
            dot_row<P, T, M, ZP ? ChunkZeros::packed_nibbles : ChunkZeros::none, R, ScaleSource::f16>(
                X, chunks, full, tail_k, rows, k, acc);
        else if (source == ScaleSource::e8m0)
            dot_row<P, T, M, ChunkZeros::none, R, ScaleSource::e8m0>(X, chunks, full, tail_k, rows, k, acc);
        else
            dot_row<P, T, M, ZP ? ChunkZeros::block_bytes : ChunkZeros::none, R, ScaleSource::table>(
                X, chunks, full, tail_k, rows, k, acc);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
            for (int m = 0; m < M; ++m)
                _mm512_store_ps(lanes.data() + 16 * ((n + r - n0) * M + m), _mm512_add_ps(acc[r][m][0], acc[r][m][1]));
    };
    constexpr int kRowsPerPass = M == 2 ? 2 : 1;
    std::size_t n = n0;
    for (; n + kRowsPerPass <= n1; n += kRowsPerPass) rows_from(n, std::integral_constant<int, kRowsPerPass>{});
    for (; n < n1; ++n) rows_from(n, std::integral_constant<int, 1>{});
    for (n = n0; n < n1; ++n)
        for (std::size_t m = 0; m < M; ++m)
            C[m * ldc + n] = _mm512_reduce_add_ps(_mm512_load_ps(lanes.data() + 16 * ((n - n0) * M + m)));
}

template <Products P, DType T, bool ZP>
void dot_dispatch_m(DotInput<P> X, std::size_t M, const WeightView& W, float* C, std::size_t ldc, std::size_t n0,
                    std::size_t n1) {
    switch (M) {
        case 1: return dot_rows_of<P, T, 1, ZP>(X, W, C, ldc, n0, n1);
        case 2: return dot_rows_of<P, T, 2, ZP>(X, W, C, ldc, n0, n1);
        case 3: return dot_rows_of<P, T, 3, ZP>(X, W, C, ldc, n0, n1);
        case 4: return dot_rows_of<P, T, 4, ZP>(X, W, C, ldc, n0, n1);
        case 5: return dot_rows_of<P, T, 5, ZP>(X, W, C, ldc, n0, n1);
        case 6: return dot_rows_of<P, T, 6, ZP>(X, W, C, ldc, n0, n1);
        case 7: return dot_rows_of<P, T, 7, ZP>(X, W, C, ldc, n0, n1);
        default: return dot_rows_of<P, T, 8, ZP>(X, W, C, ldc, n0, n1);
    }
}

template <Products P>
void dot_dispatch(DotInput<P> X, std::size_t M, const WeightView& W, float* C, std::size_t ldc, std::size_t n0,
                  std::size_t n1) {
    switch (W.dtype) {
        case DType::u4:
            return W.zero ? dot_dispatch_m<P, DType::u4, true>(X, M, W, C, ldc, n0, n1)
                          : dot_dispatch_m<P, DType::u4, false>(X, M, W, C, ldc, n0, n1);
        case DType::i4:
            return W.zero ? dot_dispatch_m<P, DType::i4, true>(X, M, W, C, ldc, n0, n1)
                          : dot_dispatch_m<P, DType::i4, false>(X, M, W, C, ldc, n0, n1);
        default: return dot_dispatch_m<P, DType::f4e2m1, false>(X, M, W, C, ldc, n0, n1);
    }
}

void dot_rows(const std::uint16_t* X, std::size_t M, const WeightView& W, float* C, std::size_t ldc, std::size_t n0,
              std::size_t n1) {
    dot_dispatch<Products::bf16>(X, M, W, C, ldc, n0, n1);
}

void int_dot_rows(const IntActivations& X, std::size_t M, const WeightView& W, float* C, std::size_t ldc,
                  std::size_t n0, std::size_t n1) {
    dot_dispatch<Products::int8>(&X, M, W, C, ldc, n0, n1);
}

bool arrange_for_int_dot(const float* A, std::size_t M, std::size_t lda, const WeightView& W, DecodeProducts products,
                         IntActivations& X) {
    const bool wanted = products == DecodeProducts::int8 || (products == DecodeProducts::automatic && cpu_prefers_int_dot());
    return wanted && M <= kCompressedRows && compressed_uses_decode_kernels(W) && cpu_has_int_dot() &&
           is_nibble(W.dtype) && arrange_int(A, M, lda, W.K, int_code_scale(W.dtype), X);
}

bool compressed_uses_int_dot(const float* A, std::size_t M, std::size_t lda, const WeightView& W,
                             DecodeProducts products) {
    IntActivations x;
    return arrange_for_int_dot(A, M, lda, W, products, x);
}

bool compressed_uses_bf16_dot(const float* A, std::size_t M, std::size_t lda, const WeightView& W) {
    return M <= kCompressedRows && compressed_uses_decode_kernels(W) && cpu_has_avx512_bf16() && is_nibble(W.dtype) &&
           bf16_dot_rows_ok(A, M, lda, W.K);
}

}  // namespace moe::backends::cpu
