#pragma once
// Testing hooks of the opencl backend: one kernel at a time on host-provided inputs, so that
// tests/backends/test_opencl_kernels.cpp compares each kernel with the reference's stage data. Each
// function runs on the selected device (see OpenclOptions::device; the runtime is built once per
// device spec and kept) and throws, with the reason, when no device is available.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "moe/spec/tensor.hpp"

namespace moe::backends::opencl_testing {

// moe_gather: [token.size(), H] f32, row i = x[token[i], :] widened to f32 (x is [.., H]).
std::vector<float> gather(const Tensor& x, const std::vector<std::uint32_t>& token, const std::string& device = "");

// moe_gemm for one expert: [M, N] f32 = A[M, K] * W[expert]^T (+ bias[expert, :] when given).
// weights: [E, N, K] when kn is false (NK layout: uploaded as given for moe_gemm_rows and
// transposed for the tiled kernels, as the backend stores it), [E, K, N] when true; read in
// their own type.
std::vector<float> gemm(const std::vector<float>& A, std::size_t M, const Tensor& weights, bool kn,
                        std::size_t expert, const Tensor* bias = nullptr, const std::string& device = "");

// moe_gemm over several experts in one launch per kernel, as the pipeline runs it: A holds
// counts[0] rows of expert 0, then counts[1] rows of expert 1, ... (experts with no rows are
// skipped); returns [sum of counts, N]. Each expert's rows are split into blocks of moe_gemm or
// moe_gemm_small and a remainder of a few rows for moe_gemm_rows, as in the pipeline.
std::vector<float> gemm_experts(const std::vector<float>& A, const std::vector<std::size_t>& counts,
                                const Tensor& weights, bool kn, const Tensor* bias = nullptr,
                                const std::string& device = "");

// moe_swiglu over `rows` rows. GEMM2: first is [rows, 2 * inter] (gate_up), up is ignored;
// GEMM3: first is gate, up is up, both [rows, inter]. Returns act, [rows, inter].
std::vector<float> swiglu(const std::vector<float>& first, const std::vector<float>& up, std::size_t rows,
                          std::size_t inter, bool gemm2, float beta, float limit, int gate_lane,
                          const std::string& device = "");

// moe_scatter_reduce: out[t, h] = sum_k slot_weight[t*K + k] * down[position[t*K + k], h],
// down being [pairs, H] in plan order. Returns [tokens, hidden].
std::vector<float> scatter_reduce(const std::vector<float>& down, const std::vector<float>& slot_weight,
                                  const std::vector<std::uint32_t>& position, std::size_t tokens, std::size_t topk,
                                  std::size_t hidden, const std::string& device = "");

}  // namespace moe::backends::opencl_testing
