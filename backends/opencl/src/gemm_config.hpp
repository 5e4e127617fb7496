#pragma once
// moe_gemm's sizes, compiled into the program (-D flags, kernels/gemm*.cl): what the device's
// limits allow (choose_gemm_config), the shapes a GPU's autotune tries (gemm_candidates), and the
// text form the tune cache stores.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cl_device.hpp"

namespace moe::backends::ocl {

// A work-group of lx x ly work-items computes a tm x tn tile, each work-item mwi rows by nv
// vectors of vw columns, in k-steps of tk.
struct GemmShape {
    std::uint32_t lx = 1, ly = 1, mwi = 1, nv = 1, tk = 16;
};

struct GemmConfig {
    // gemm_gpu.cl's bodies (GPUs: wide register blocks, lane groups for the NK rows kernels)
    // instead of gemm.cl's (CPU devices).
    bool wide = false;
    std::uint32_t vw = 4;   // floats per vector (float4, float8, float16; float4 when wide)
    GemmShape tiled;        // moe_gemm_*: blocks of rows
    GemmShape small;        // moe_gemm_small_*: blocks of fewer rows (about half), wider or as wide
    GemmShape rows;         // moe_gemm_rows_*_kn: a few rows (ly = 1), gemm.cl's body always
    // moe_gemm_rows_*_nk: rows per tile, and columns per work-item (gemm.cl) or per lane group of
    // 32 (wide, rows_wg work-items per work-group).
    std::uint32_t rows_mr = 8, rows_nc = 4, rows_wg = 128;
    // k-steps per pass of the wide NK rows kernels (plain and compressed): 1, 2 or 4, all their
    // weight loads issued before the first product (more bytes in flight per warp; the same bits).
    // 1 unless MOE_OPENCL_ROWS_STEPS says otherwise (rows_steps_from_environment).
    std::uint32_t rows_steps = 1;
    // moe_gemm_f64's tile side (work-group f64_tile x f64_tile, f64_tile rows per tile): 16, less
    // where the device or the kernel takes fewer work-items (set by Runtime::build_f64).
    std::uint32_t f64_tile = 16;
    // The compressed GEMMs' work-groups are per program: CompressedGemms (cl_runtime.hpp).
    std::uint32_t tiled_tm() const { return tiled.ly * tiled.mwi; }
    std::uint32_t tiled_tn() const { return tiled.lx * tiled.nv * vw; }
    std::uint32_t small_tm() const { return small.ly * small.mwi; }
    std::uint32_t small_tn() const { return small.lx * small.nv * vw; }
    std::uint32_t rows_tm(bool kn) const { return kn ? rows.ly * rows.mwi : rows_mr; }
    std::uint32_t rows_tn(bool kn) const;
    std::size_t rows_nk_wg() const { return wide ? rows_wg : rows.lx; }  // work-items of the NK rows kernels
    // An expert's rows after its full tiled blocks: more than big_min() go to one partial tiled
    // block; then more than small_min() (after full small blocks) to one partial small block; the
    // rest to the rows kernels. A CPU device runs half-empty blocks at a cost (big_min = tm - ts/2,
    // small_min = ts/2); a GPU pays for every extra pass over an expert's weights (a rows tile
    // reads them all again) more than for empty rows in a block (big_min = ts, small_min = rows_mr).
    // With tiny tiles (below) a GPU's expert that already has a block sends any remainder to the
    // small launch (big_min = ts + ts/2, small_min = 0): one launch covers what is left, and no
    // rows pass reads the expert's weights again.
    std::uint32_t big_min() const {
        return wide ? small_tm() + tiny_tm() : tiled_tm() - small_tm() / 2;
    }
    std::uint32_t small_min() const { return wide ? (tiny_tm() ? 0 : rows_mr) : small_tm() / 2; }
    // Tiny tiles (wide bodies with 8 rows per work-item in the small shape): moe_gemm_small_*
    // computes a tile of at most small_tm() / 2 rows with half the rows per work-item (the same
    // work-group and columns), chosen per tile from its row count; 0 when there are none.
    std::uint32_t tiny_tm() const { return wide && small.mwi == 8 ? small_tm() / 2 : 0; }
    // Elements the kernels may read past the end of an A, weight or bias buffer (never used).
    std::size_t pad_elems() const;
    std::string defines() const;  // the -D flags
    std::string describe() const;
    // "lx ly mwi nv tk" of the tiled shape (the autotune's choice; the rest follows from it).
    std::string tiled_key() const;
};

// Sizes for this device. CPU devices: gemm.cl's bodies, vector width from the preferred float
// vector width, about 64 x 64 output tiles, shrunk until the work-group fits max_work_group (and
// the kernel's own limit, kernel_wg, once known) and both double-buffered tiles fit local
// memory. Other devices (GPUs): gemm_gpu.cl's bodies with the first of gemm_candidates() that
// fits. MOE_OPENCL_GEMM=wide or =compact in the environment forces either kind (tests run the GPU
// bodies on PoCL that way).
GemmConfig choose_gemm_config(const DeviceInfo& d, std::size_t kernel_wg = 0);

// The wide configurations the autotune times on a GPU, best guess first, each one that fits
// the device's limits (work-group, local memory, kernel_wg).
std::vector<GemmConfig> gemm_candidates(const DeviceInfo& d, std::size_t kernel_wg = 0);

// MOE_OPENCL_ROWS_STEPS: unset or empty 1, else 1, 2 or 4 (GemmConfig::rows_steps; GPU bodies only).
// rows_steps_problem() says what is wrong with a value that is none of those ("" when fine);
// rows_steps_from_environment() reads 1 for it (the backend refuses to run with it first).
std::string rows_steps_problem();
std::uint32_t rows_steps_from_environment();

// A wide configuration from tiled_key()'s text; nullopt when malformed or not fitting the device.
std::optional<GemmConfig> gemm_config_from_key(const DeviceInfo& d, const std::string& key);

}  // namespace moe::backends::ocl
