#include "gemm_dispatch.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace moe::backends::ocl {

namespace {

using u32 = std::uint32_t;
using i32 = std::int32_t;

const char* type_suffix(i32 type) { return type == 1 ? "f16" : type == 2 ? "bf16" : "f32"; }

// Appends `tiles` to the table and returns their range.
TileRange append(std::vector<u32>& table, const std::vector<u32>& tiles) {
    TileRange r{u32(table.size() / 4), u32(tiles.size() / 4)};
    table.insert(table.end(), tiles.begin(), tiles.end());
    return r;
}

}  // namespace

ExpertRows expert_rows(const std::vector<std::size_t>& counts) {
    ExpertRows r;
    r.counts = counts;
    r.offsets.assign(counts.size() + 1, 0);
    for (std::size_t e = 0; e < counts.size(); ++e) {
        r.offsets[e + 1] = r.offsets[e] + counts[e];
        if (counts[e]) r.used.push_back(e);
    }
    return r;
}

std::vector<std::size_t> expert_counts(const Tensor& indices, std::size_t experts) {
    std::vector<std::size_t> counts(experts, 0);
    const std::size_t n = indices.size();
    const unsigned char* p = indices.data();
    // Validated indices: in [0, E).
    if (indices.dtype() == DType::i64)
        for (std::size_t i = 0; i < n; ++i) ++counts[std::size_t(reinterpret_cast<const std::int64_t*>(p)[i])];
    else
        for (std::size_t i = 0; i < n; ++i) ++counts[std::size_t(reinterpret_cast<const std::int32_t*>(p)[i])];
    return counts;
}

// The _nk1, _nk2, _nk4 or _nk (8 rows) kernel for a tile of n rows.
int rows_variant(u32 n) { return n <= 1 ? 0 : n <= 2 ? 1 : n <= 4 ? 2 : 3; }

bool wants_pieces(const Runtime& rt, const Weights& w) { return w.compressed && !rt.gemm().wide; }

GemmPlan plan_gemm(const GemmConfig& c, const ExpertRows& er, bool rows_kn, bool f64, bool wrong_offset,
                   std::vector<u32>& table, bool pieces) {
    std::vector<u32> tiled, small, rows, f64_tiles, nk[4], piece[4];
    const u32 tm = c.tiled_tm(), ts = c.small_tm(), rtm = c.rows_tm(rows_kn);
    const u32 big_min = c.big_min(), small_min = c.small_min();
    for (std::size_t u = 0; u < er.used.size(); ++u) {
        const std::size_t e = er.used[u];
        const u32 row0 = u32(er.offsets[e]), count = u32(er.counts[e]);
        // The wrong-offset mutant: the second used expert reads its rows at the first's offset.
        const u32 a_row0 = wrong_offset && u == 1 ? u32(er.offsets[er.used[0]]) : row0;
        const auto add = [&](std::vector<u32>& list, u32 r, u32 n) {
            list.insert(list.end(), {u32(e), a_row0 + r, row0 + r, n});
        };
        if (pieces && !f64)
            for (u32 r = 0; r < count; r += c.rows_mr) {
                const u32 n = std::min(c.rows_mr, count - r);
                add(piece[rows_variant(n)], r, n);
            }
        u32 r = 0;
        if (f64) {
            for (; r < count; r += c.f64_tile) add(f64_tiles, r, std::min<u32>(c.f64_tile, count - r));
            continue;
        }
        for (; r + tm <= count; r += tm) add(tiled, r, tm);
        if (count - r > big_min) {
            add(tiled, r, count - r);
            continue;
        }
        for (; r + ts <= count; r += ts) add(small, r, ts);
        // small_min is 0 with tiny tiles: an expert's remainder after a block goes to the small
        // launch however few its rows (an expert with no block and at most rows_mr rows, e.g.
        // decode, still goes to the rows kernels).
        if (count - r > small_min && (small_min > 0 || r > 0 || count - r > c.rows_mr)) {
            add(small, r, count - r);
            continue;
        }
        for (; r < count; r += rtm) {
            const u32 n = std::min(rtm, count - r);
            add(rows_kn ? rows : nk[rows_variant(n)], r, n);
        }
    }
    GemmPlan plan;
    plan.tiled = append(table, tiled);
    plan.small = append(table, small);
    plan.rows_kn = append(table, rows);
    for (int v = 0; v < 4; ++v) plan.rows_nk[v] = append(table, nk[v]);
    plan.f64 = append(table, f64_tiles);
    plan.has_pieces = pieces && !f64;
    for (int v = 0; v < 4; ++v) plan.pieces[v] = append(table, piece[v]);
    return plan;
}

bool rows_nk_only(const GemmPlan& p) {
    return !p.tiled.count && !p.small.count && !p.rows_kn.count && !p.f64.count && !p.has_pieces;
}

void enqueue_gemm(const Runtime& rt, const Buffer& A, const Buffer& tiles, const GemmPlan& plan, u32 N, u32 K,
                  const Weights& w, const Weights* bias, const Buffer& C, const ActEpilogue* act) {
    if (act && (!rows_nk_only(plan) || w.compressed))
        throw std::logic_error("enqueue_gemm: the activation epilogue needs a plan of NK rows tiles only");
    if (N == 0) return;
    const Buffer& b = bias ? bias->buf : w.buf;
    const i32 b_type = bias ? bias->type : 0, has_bias = bias != nullptr;
    if (plan.f64.count) {  // KN copy (`buf`) whatever the given layout
        rt.args("moe_gemm_f64", A, tiles, plan.f64.first, N, K, w.buf, w.type, i32(1), b, b_type, has_bias, C);
        const std::size_t t = rt.gemm().f64_tile;
        const std::size_t global[2] = {(N + t - 1) / t * t, plan.f64.count * t}, local[2] = {t, t};
        rt.launch("moe_gemm_f64", 2, global, local);
        return;
    }
    if (w.compressed) {
        // The few-row tiles go to moe_gemm_compressed_rows* when each lane's 16 weights lie in one
        // group (K and the group size multiples of 16); every other tile (and every tile otherwise:
        // the f32 ranges lie one after the other in the table) to moe_gemm_compressed_tiled on the
        // GPU bodies, moe_gemm_compressed on the CPU bodies. With pieces (CPU bodies), every row
        // goes to moe_gemm_compressed_rows* when it can.
        const bool wide = rt.gemm().wide;
        // The program built for these weights' types (Runtime::build_compressed): its kernels
        // are named with the types' suffix, and are labelled without it in the kernel times.
        const CompressedGemms& cg = rt.compressed(compressed_types(w));
        // Work-group of the rows kernels: MOE_CR_WG on the GPU bodies (0 where none fits the
        // device), 4 on the CPU bodies.
        const std::size_t wg = wide ? cg.rows_wg : 4;
        const bool rows_ok = K % 16 == 0 && w.groups && (K / w.groups) % 16 == 0 && wg != 0;
        const bool all_rows = rows_ok && plan.has_pieces && wants_pieces(rt, w);
        u32 count = plan.tiled.count + plan.small.count + plan.rows_kn.count;
        if (!rows_ok)
            for (const TileRange& r : plan.rows_nk) count += r.count;
        if (count && !all_rows) {
            const bool tiled = wide && cg.tiled;
            const char* label = tiled ? "moe_gemm_compressed_tiled" : "moe_gemm_compressed";
            const std::string kernel = cg.kernel(label);
            const char* name = kernel.c_str();
            rt.args(name, A, tiles, plan.tiled.first, N, K, w.nk, w.scale, w.zero, w.groups, w.scale_rows, b, b_type,
                    has_bias, C);
            if (tiled) {  // the tiled shape's work-group, one per tile and tiled_tn() columns
                const GemmConfig& c = rt.gemm();
                const std::size_t tn = c.tiled_tn(), global[2] = {(N + tn - 1) / tn * c.tiled.lx, count * c.tiled.ly},
                                  local[2] = {c.tiled.lx, c.tiled.ly};
                rt.launch(name, 2, global, local, label);
            } else {
                const std::size_t global[2] = {(N + 63) / 64 * 64, count};
                rt.launch(name, 2, global, nullptr, label);
            }
        }
        if (!rows_ok) return;
        // Columns per work-group: MOE_CR_WG / MOE_CR_LG * MOE_CR_CPW (lane groups of 32, 4 columns
        // each) on the GPU bodies; 16 (8 in the 8-row kernel) on the CPU bodies.
        const char* rows[4] = {"1", "2", "4", "8"};
        for (int v = 0; v < 4; ++v) {
            const TileRange& r = all_rows ? plan.pieces[v] : plan.rows_nk[v];
            if (r.count == 0) continue;
            const std::string name = cg.kernel(std::string("moe_gemm_compressed_rows") + rows[v]);
            rt.args(name.c_str(), A, tiles, r.first, N, K, w.nk, w.scale, w.zero, w.groups, w.scale_rows, b, b_type,
                    has_bias, C);
            const std::size_t cols = wide ? wg / 32 * 4 : v == 3 ? 8 : 16;
            const std::size_t global[2] = {(N + cols - 1) / cols * wg, r.count}, local[2] = {wg, 1};
            rt.launch(name.c_str(), 2, global, local, "moe_gemm_compressed_rows");
        }
        return;
    }
    const GemmConfig& c = rt.gemm();
    const std::string type = std::string("_") + type_suffix(w.type);
    // A launch of r's tiles, lx x ly work-items per tile and tn columns, its arguments set.
    const auto launch = [&](TileRange r, const std::string& name, std::size_t lx, std::size_t ly, std::size_t tn,
                            const char* label) {
        const std::size_t global[2] = {(N + tn - 1) / tn * lx, r.count * ly}, local[2] = {lx, ly};
        rt.launch(name.c_str(), 2, global, local, label);
    };
    const auto run = [&](TileRange r, const std::string& name, const Buffer& wb, std::size_t lx, std::size_t ly,
                         std::size_t tn, const char* label) {
        if (r.count == 0) return;
        rt.args(name.c_str(), A, tiles, r.first, N, K, wb, b, b_type, has_bias, C);
        launch(r, name, lx, ly, tn, label);
    };
    run(plan.tiled, "moe_gemm" + type + "_kn", w.buf, c.tiled.lx, c.tiled.ly, c.tiled_tn(), "moe_gemm");
    run(plan.small, "moe_gemm_small" + type + "_kn", w.buf, c.small.lx, c.small.ly, c.small_tn(), "moe_gemm_small");
    // moe_gemm_rows reads the NK original when there is one.
    run(plan.rows_kn, "moe_gemm_rows" + type + "_kn", w.buf, c.rows.lx, 1, c.rows_tn(true), "moe_gemm_rows");
    // The NK rows kernels also take the activation epilogue's arguments (mode 0: none; the
    // buffers then C itself, never read).
    const ActEpilogue none;
    const ActEpilogue& e = act ? *act : none;
    const char* variant[4] = {"1", "2", "4", ""};
    for (int v = 0; v < 4; ++v) {
        const TileRange r = plan.rows_nk[v];
        if (r.count == 0) continue;
        const std::string name = "moe_gemm_rows" + type + "_nk" + variant[v];
        rt.args(name.c_str(), A, tiles, r.first, N, K, w.nk, b, b_type, has_bias, C, e.mode, e.gate ? *e.gate : C,
                e.act ? *e.act : C, e.beta, e.limit, e.gate_lane);
        launch(r, name, c.rows_nk_wg(), 1, c.rows_tn(false), "moe_gemm_rows");
    }
}

}  // namespace moe::backends::ocl
