#pragma once
// One GEMM over every used expert's rows (kernels/gemm*.cl, f64.cl): the row tiles of each
// expert, built on the host from the per-expert counts, packed into one table that travels with
// the run's inputs, and the launches that read it.
#include <cstdint>
#include <cstddef>
#include <vector>

#include "cl_runtime.hpp"
#include "device_weights.hpp"

namespace moe::backends::ocl {

// Per-expert rows of a run: counts[e] rows of expert e from offsets[e] on; `used` the experts
// with rows, ascending.
struct ExpertRows {
    std::vector<std::size_t> counts, offsets, used;
};
ExpertRows expert_rows(const std::vector<std::size_t>& counts);
// The counts of each expert in the indices (i32 or i64): what mask_gen computes on the device;
// the host needs them only to size the launches.
std::vector<std::size_t> expert_counts(const Tensor& indices, std::size_t experts);

// A contiguous range of tiles in the packed table.
struct TileRange {
    std::uint32_t first = 0, count = 0;
};
// The launches of one GEMM: every range is a kernel launch of `count` row tiles, four uints each
// (expert, first row of A, first row of C, rows). An expert's rows go to blocks of tm rows
// (moe_gemm) while at least tm are left; a remainder of more than big_min() rows to one more,
// partial, block; then blocks of ts rows (moe_gemm_small, about half as many rows, so few-row
// experts do not run half-empty blocks), a remainder of more than small_min() rows to one partial
// small block; the last few rows to moe_gemm_rows in tiles of rows_tm(kn) (each tile reads the
// expert's weights again), NK tiles of at most 1, 2 and 4 rows to the kernels of that many rows
// (_nk1, _nk2, _nk4), so decode does not compute 8 copies of one row (GemmConfig::big_min).
// With tiny tiles (GemmConfig::tiny_tm, GPUs) small_min is 0: what is left of an expert that has a
// block goes to one partial small tile, which moe_gemm_small computes with the tiny body when it
// has at most tiny_tm() rows; only experts of at most rows_mr rows in all go to the rows kernels.
// f64: tiles of GemmConfig::f64_tile rows (16 where the device allows) for moe_gemm_f64.
// pieces (only when asked for): every expert's rows again, in tiles of at most rows_mr rows sorted
// like rows_nk, for compressed weights on the CPU bodies (enqueue_gemm).
struct GemmPlan {
    TileRange tiled, small, rows_kn, rows_nk[4], f64;  // rows_nk: the _nk1, _nk2, _nk4, _nk kernels
    TileRange pieces[4];
    bool has_pieces = false;
};
// Appends the plan's tiles to `table`. rows_kn: moe_gemm_rows reads KN weights (no NK copy).
// wrong_offset: the mutant whose second used expert reads A at the first's offset. pieces: also
// lay out GemmPlan::pieces (not for f64).
GemmPlan plan_gemm(const GemmConfig& c, const ExpertRows& r, bool rows_kn, bool f64, bool wrong_offset,
                   std::vector<std::uint32_t>& table, bool pieces = false);

// Whether enqueue_gemm wants GemmPlan::pieces for weights `w` on this runtime: compressed weights
// on the CPU bodies, whose moe_gemm_compressed_rows* read each weight once per piece at 10-25
// GB/s of codes where moe_gemm_compressed, one work-item per column, reads them at 0.03 GB/s
// (gpt-oss-20b u4 at T = 512: 13.9 s against 0.53 s for f32 weights in the tiled kernels).
bool wants_pieces(const Runtime& rt, const Weights& w);

// Whether every tile of the plan runs in moe_gemm_rows_*_nk* (decode: each expert has at most
// rows_mr rows and NK weights): what the activation epilogue needs.
bool rows_nk_only(const GemmPlan& plan);

// The activation a rows GEMM applies to the block of C it stores (kernels/activation.cl), so that
// decode needs no moe_swiglu launch: mode 1 (GEMM2) on the gate_up result, mode 2 (GEMM3) on the
// up result with `gate` the gate GEMM's; act [rows, I] receives it.
struct ActEpilogue {
    std::int32_t mode = 0;
    const Buffer* gate = nullptr;
    const Buffer* act = nullptr;
    float beta = 1.0f, limit = 0.0f;
    std::int32_t gate_lane = 0;
};

// C = A * W[e] (+ bias[e]) for every tile of the plan: A [rows, K] and C [rows, N] f32 (f64 when
// the plan is f64's), A padded (pad_elems()); the table in `tiles`. With `act` the plan must be
// rows_nk_only and the weights uncompressed: the rows kernels also store the activation.
void enqueue_gemm(const Runtime& rt, const Buffer& A, const Buffer& tiles, const GemmPlan& plan, std::uint32_t N,
                  std::uint32_t K, const Weights& w, const Weights* bias, const Buffer& C,
                  const ActEpilogue* act = nullptr);

}  // namespace moe::backends::ocl
