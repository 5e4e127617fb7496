#pragma once
// `cpu`: the routed pipeline of OpenVINO's GPU plugin on the CPU. route (mask_gen) -> gather the routed rows
// per expert -> first GEMM(s) -> activation -> down GEMM (+ bias) -> scatter-reduce, weighted,
// in top-k slot order. f32 arithmetic for f32/f16/bf16 inputs, f64 for f64 inputs. Experts with
// few rows run side by side, one thread each; an expert with many rows (a hot expert), or too few
// experts to share out, gets every thread. Results do not depend on the thread count.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "moe/spec/backend.hpp"
#include "moe/spec/mutant.hpp"

namespace moe::backends {

enum class CpuMutation {
    none,
    tile_edge_dropped,   // the first GEMM leaves the last partial 16-column tile uncomputed
    wrong_expert_block,  // the second used expert's first GEMM reads the next expert's weights
    scatter_race,        // lost updates in the scatter-reduce: even tokens keep only their last slot
};

// The cpu mutants (every CpuMutation but none).
std::vector<Mutant> cpu_mutants();

// The products the decode kernels for 4-bit weights (u4, i4, MXFP4) take where either engine
// could: int8 (vpdpbusd, on activations that lie on a per-block grid) or bf16 (vdpbf16ps).
// `automatic` takes the one measured faster on the processor's vendor: int8 on Intel, bf16
// elsewhere (docs/cpu-backend.md, "Decode products"); the environment variable
// MOE_CPU_DECODE_PRODUCTS (auto, int8 or bf16) sets it for a backend constructed with automatic.
// Either engine's result is within the backend's declared precision; int8 where the CPU lacks
// AVX512_VNNI/GFNI, or the activations are off the grid, falls back to bf16.
enum class DecodeProducts { automatic, int8, bf16 };

// "auto", "int8" or "bf16".
const char* decode_products_name(DecodeProducts p);

// Whether this CPU runs that engine's kernels: int8 needs AVX-512 with VNNI, VBMI and GFNI, bf16
// AVX512_BF16 and VBMI (automatic: always true). A CPU without either runs the f32 decode kernels.
bool cpu_runs_decode_products(DecodeProducts p);

// What `automatic` resolves to on this CPU (int8 or bf16), the environment aside.
DecodeProducts cpu_decode_products_default();

struct CpuOptions {
    int threads = 0;  // 0: every hardware thread
    CpuMutation mutation = CpuMutation::none;
    DecodeProducts decode_products = DecodeProducts::automatic;
};

class CpuBackend : public Backend {
public:
    // Throws InputError when MOE_CPU_DECODE_PRODUCTS is set to something other than auto, int8, bf16.
    explicit CpuBackend(CpuOptions options = {});
    std::string name() const override;
    std::string description() const override;
    Support supports(const Problem& p) const override;
    Precision precision(DType data_type) const override;
    bool provides_stages() const override { return true; }
    // The weights reordered once into the GEMM library's blocked layout, as at model load (f16
    // weights widened to f32 there: the library has no f16 matmul on CPUs without AVX512-FP16).
    // Decode keeps reading the op's own weight tensors; compressed weights are dequantised and
    // packed only when an expert can get more rows than the decode kernels take (T > 8).
    void prepare(const Problem& p) override;
    // Bytes of the copies prepare() made for the current problem.
    std::size_t prepared_bytes() const;
    Output run(const Problem& p, bool want_stages) override;
    int threads() const { return threads_; }
    // What the decode kernels for 4-bit weights take (options, else the environment): never automatic.
    DecodeProducts decode_products() const { return products_; }

private:
    struct Workspaces;  // buffers reused between runs
    struct Prepared;    // what prepare() made
    CpuOptions options_;
    std::shared_ptr<Workspaces> workspaces_;
    int threads_;
    DecodeProducts products_;
    // What prepare() made, and for which problem (its address and its weights' storage).
    const Problem* prepared_for_ = nullptr;
    std::vector<const unsigned char*> prepared_sources_;
    std::shared_ptr<Prepared> prepared_;
};

// The cpu backend's f32 GEMM engine on its own: C[M, N] = A[M, K] W[expert]^T, W an [E, N, K]
// tensor read in its own type: f32, f16, bf16, or compressed with its scale and zero point (null:
// none), which up to 8 rows of A the decode kernels read in place. moe-bench measures the
// machine's GEMM rate with it, and the decode kernels' rates (--decode-study, each engine's too).
void cpu_f32_gemm(const float* A, std::size_t M, const Tensor& weights, std::size_t expert, float* C, int threads,
                  const Tensor* scale = nullptr, const Tensor* zero_point = nullptr,
                  DecodeProducts products = DecodeProducts::automatic);

// The same engine on weights packed once into the library's layout, as prepare() packs them: the
// best GEMM rate the engine reaches. `pack` runs once, `run` as often as timed.
class CpuPackedGemm {
public:
    CpuPackedGemm(const Tensor& weights, int threads);  // [E, N, K], f32
    void run(const float* A, std::size_t M, std::size_t expert, float* C) const;

private:
    struct Impl;
    std::shared_ptr<const Impl> impl_;
};

}  // namespace moe::backends
