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

struct CpuOptions {
    int threads = 0;  // 0: every hardware thread
    CpuMutation mutation = CpuMutation::none;
};

class CpuBackend : public Backend {
public:
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

private:
    struct Workspaces;  // buffers reused between runs
    struct Prepared;    // what prepare() made
    CpuOptions options_;
    std::shared_ptr<Workspaces> workspaces_;
    int threads_;
    // What prepare() made, and for which problem (its address and its weights' storage).
    const Problem* prepared_for_ = nullptr;
    std::vector<const unsigned char*> prepared_sources_;
    std::shared_ptr<Prepared> prepared_;
};

// The cpu backend's f32 GEMM engine on its own: C[M, N] = A[M, K] W[expert]^T, W an [E, N, K]
// tensor read in its own type: f32, f16, bf16, or compressed with its scale and zero point (null:
// none), which up to 8 rows of A the decode kernels read in place. moe-bench measures the
// machine's GEMM rate with it, and the decode kernels' rates (--decode-study).
void cpu_f32_gemm(const float* A, std::size_t M, const Tensor& weights, std::size_t expert, float* C, int threads,
                  const Tensor* scale = nullptr, const Tensor* zero_point = nullptr);

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
