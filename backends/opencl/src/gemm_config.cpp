#include "gemm_config.hpp"

#include <algorithm>
#include <sstream>

#include "environment_setting.hpp"

namespace moe::backends::ocl {

namespace {

std::uint32_t floor_pow2(std::uint32_t v) {
    std::uint32_t p = 1;
    while (p * 2 <= v) p *= 2;
    return p;
}

std::size_t device_wg(const DeviceInfo& d, std::size_t kernel_wg) {
    std::size_t wg = d.max_work_group ? d.max_work_group : 1;
    return kernel_wg ? std::min(wg, kernel_wg) : wg;
}

// Local memory of one double-buffered tile pair, in bytes.
std::uint64_t local_bytes(const GemmShape& s, std::uint32_t vw, bool wide) {
    const std::uint64_t tm = std::uint64_t(s.ly) * s.mwi, tn = std::uint64_t(s.lx) * s.nv * vw;
    return 2ull * (s.tk * (tm + (wide ? 4 : 0)) + s.tk * tn) * sizeof(float);
}

// The rows kernels' shapes, the same for every configuration of a kind.
void set_rows(GemmConfig& c, std::size_t wg, std::size_t max_x) {
    GemmShape& r = c.rows;
    r = {std::max<std::uint32_t>(1, std::min<std::uint32_t>(64 / c.vw, std::uint32_t(std::min(wg, max_x)))), 1, 4, 1,
         std::max<std::uint32_t>(16, c.vw)};
    c.rows_mr = 8;
    c.rows_nc = 4;
    c.rows_wg = 128;
    c.rows_steps = c.wide ? rows_steps_from_environment() : 1;
    while (c.rows_wg > 32 && c.rows_wg > std::min(wg, max_x)) c.rows_wg /= 2;
}

// A wide configuration around a tiled shape, or nullopt when the device cannot run it.
std::optional<GemmConfig> wide_config(const DeviceInfo& d, std::size_t kernel_wg, const GemmShape& t) {
    GemmConfig c;
    c.wide = true;
    c.vw = 4;
    c.tiled = t;
    // Small blocks: half the rows and the same columns, with the same block per work-item (half
    // the work-items), so they run as efficiently per work-item as full ones.
    c.small = t;
    c.small.ly = std::max<std::uint32_t>(1, t.ly / 2);
    const std::size_t wg = device_wg(d, kernel_wg);
    const std::size_t max_x = d.max_item_sizes[0] ? d.max_item_sizes[0] : 1;
    const std::size_t max_y = d.max_item_sizes[1] ? d.max_item_sizes[1] : 1;
    set_rows(c, wg, max_x);
    if (c.rows_wg < 32) return std::nullopt;
    for (const GemmShape* s : {&c.tiled, &c.small}) {
        const std::size_t items = std::size_t(s->lx) * s->ly;
        const std::uint64_t tm = std::uint64_t(s->ly) * s->mwi, tn = std::uint64_t(s->lx) * s->nv * 4;
        if (items > wg || s->lx > max_x || s->ly > max_y || local_bytes(*s, 4, true) > d.local_mem) return std::nullopt;
        if (s->mwi % 4 || s->mwi > 8 || s->nv > 4 || s->tk % 4 || items % 32) return std::nullopt;
        // moe_wide_fetch holds at most 8 vectors of each tile per work-item.
        if (tm * s->tk / 4 > 8 * items || s->tk * tn / 4 > 8 * items) return std::nullopt;
    }
    return c;
}

GemmConfig compact_config(const DeviceInfo& d, std::size_t kernel_wg) {
    GemmConfig c;
    // float4 at least (a GPU reporting 1 still loads float4 well), at most float16.
    c.vw = d.float_vector_width >= 4 ? std::min<std::uint32_t>(16, floor_pow2(d.float_vector_width)) : 4;
    const std::size_t wg = device_wg(d, kernel_wg);
    const std::size_t max_x = d.max_item_sizes[0] ? d.max_item_sizes[0] : 1;
    const std::size_t max_y = d.max_item_sizes[1] ? d.max_item_sizes[1] : 1;
    // Tiled: 4 rows x one vector per work-item, about 64 columns (lx vectors) by 64 rows (ly = 16).
    GemmShape& t = c.tiled;
    t.mwi = 4;
    t.nv = 1;
    t.tk = std::max<std::uint32_t>(16, c.vw);
    t.lx = std::max<std::uint32_t>(1, 64 / c.vw);
    t.ly = 16;
    while (t.lx > 1 && t.lx > max_x) t.lx /= 2;
    while (t.ly > 1 && (std::size_t(t.lx) * t.ly > wg || t.ly > max_y)) t.ly /= 2;
    while (t.lx > 1 && std::size_t(t.lx) * t.ly > wg) t.lx /= 2;
    while (t.ly > 1 && local_bytes(t, c.vw, false) > d.local_mem) t.ly /= 2;
    while (t.lx > 1 && local_bytes(t, c.vw, false) > d.local_mem) t.lx /= 2;
    // Small (experts with few rows, e.g. 32 of them): half the rows and twice the columns of a
    // tiled block, so the work-group and each work-item's block stay the same.
    GemmShape& s = c.small;
    s = t;
    if (s.ly > 1) {
        s.ly /= 2;
        if (std::size_t(s.lx) * 2 <= max_x) s.lx *= 2;
    }
    while (s.lx > 1 && local_bytes(s, c.vw, false) > d.local_mem) s.lx /= 2;
    // Rows (decode): one row of work-items over the same columns; 4 rows per tile for KN, and for
    // NK 8 rows and 4 columns per work-item streamed without local memory.
    set_rows(c, wg, max_x);
    return c;
}

}  // namespace

std::uint32_t GemmConfig::rows_tn(bool kn) const {
    if (kn) return rows.lx * rows.nv * vw;
    return wide ? rows_wg / 32 * rows_nc : rows.lx * rows_nc;
}

std::size_t GemmConfig::pad_elems() const {
    // Over-reads: a k-step or a vector past the end of a row (A, NK weights), a column tile past
    // N (KN weights, bias), plus one vector.
    return std::max({tiled.tk, tiled_tn(), small.tk, small_tn(), rows.tk, rows_tn(true), rows_tn(false), 8u}) + vw;
}

std::string GemmConfig::defines() const {
    const auto shape = [](const char* p, const GemmShape& s) {
        const std::string P = std::string(" -DMOE_") + p + "_";
        return P + "LX=" + std::to_string(s.lx) + P + "LY=" + std::to_string(s.ly) + P + "MWI=" + std::to_string(s.mwi) +
               P + "NV=" + std::to_string(s.nv) + P + "TK=" + std::to_string(s.tk);
    };
    return "-DMOE_VW=" + std::to_string(vw) + " -DMOE_GEMM_WIDE=" + (wide ? "1" : "0") + shape("GT", tiled) +
           shape("GS", small) + shape("GR", rows) + " -DMOE_GR_MR=" + std::to_string(rows_mr) +
           " -DMOE_GR_NC=" + std::to_string(rows_nc) + " -DMOE_GR_WG=" + std::to_string(rows_wg) +
           " -DMOE_GS_TINY=" + (tiny_tm() ? "1" : "0") + " -DMOE_GR_STEPS=" + std::to_string(rows_steps);
}

std::string GemmConfig::describe() const {
    return std::string(wide ? "GPU bodies" : "CPU bodies") + ", float" + std::to_string(vw) + "; tiled " +
           std::to_string(tiled_tm()) + "x" + std::to_string(tiled_tn()) + " tiles, work-group " +
           std::to_string(tiled.lx) + "x" + std::to_string(tiled.ly) + ", " + std::to_string(tiled.mwi) + "x" +
           std::to_string(tiled.nv * vw) + " per work-item, k-step " + std::to_string(tiled.tk) + "; small " +
           std::to_string(small_tm()) + "x" + std::to_string(small_tn()) + " tiles, work-group " +
           std::to_string(small.lx) + "x" + std::to_string(small.ly) +
           (tiny_tm() ? " (tiles of at most " + std::to_string(tiny_tm()) + " rows: 4 per work-item)" : std::string()) +
           "; rows " + std::to_string(rows_tm(true)) +
           " (KN) / " + std::to_string(rows_tm(false)) + " (NK) per tile" +
           (rows_steps > 1 ? " (" + std::to_string(rows_steps) + " k-steps a pass)" : std::string());
}

std::string rows_steps_problem() {
    const auto v = environment_setting("MOE_OPENCL_ROWS_STEPS");
    if (!v || *v == "1" || *v == "2" || *v == "4") return "";
    return "MOE_OPENCL_ROWS_STEPS: '" + *v + "' is not 1, 2 or 4 (k-steps a pass of the GPU bodies' decode kernels)";
}

std::uint32_t rows_steps_from_environment() {
    const auto v = environment_setting("MOE_OPENCL_ROWS_STEPS");
    if (!v || !rows_steps_problem().empty()) return 1;
    return static_cast<std::uint32_t>(std::stoul(*v));
}

std::string GemmConfig::tiled_key() const {
    return std::to_string(tiled.lx) + " " + std::to_string(tiled.ly) + " " + std::to_string(tiled.mwi) + " " +
           std::to_string(tiled.nv) + " " + std::to_string(tiled.tk);
}

std::vector<GemmConfig> gemm_candidates(const DeviceInfo& d, std::size_t kernel_wg) {
    // 128 x 128 tiles with 8 x 8 per work-item (k-steps of 16 or 8), and 64 x 128 tiles with half
    // the work-items (k-steps of 16 or 8) or half the rows per work-item.
    static const GemmShape shapes[] = {
        {16, 16, 8, 2, 16}, {16, 16, 8, 2, 8}, {16, 8, 8, 2, 16}, {16, 8, 8, 2, 8}, {16, 16, 4, 2, 16}};
    std::vector<GemmConfig> out;
    for (const auto& s : shapes)
        if (auto c = wide_config(d, kernel_wg, s)) out.push_back(*c);
    return out;
}

std::optional<GemmConfig> gemm_config_from_key(const DeviceInfo& d, const std::string& key) {
    std::istringstream in(key);
    GemmShape s;
    if (!(in >> s.lx >> s.ly >> s.mwi >> s.nv >> s.tk)) return std::nullopt;
    return wide_config(d, 0, s);
}

GemmConfig choose_gemm_config(const DeviceInfo& d, std::size_t kernel_wg) {
    const auto forced = environment_setting("MOE_OPENCL_GEMM");
    const bool wide = forced ? *forced == "wide" : !(d.type & CL_DEVICE_TYPE_CPU);
    if (wide) {
        const auto c = gemm_candidates(d, kernel_wg);
        if (!c.empty()) return c.front();
    }
    return compact_config(d, kernel_wg);
}

}  // namespace moe::backends::ocl
