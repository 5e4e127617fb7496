#pragma once
// Same-device baselines for moe-bench: what the OpenCL device the opencl backend runs on does
// with its own library GEMM and a plain copy, timed by the device (profiling events), so a MoE
// layer's device time can be read as a fraction of them. A separate library
// (moe_backend_opencl_anchors, with CLBlast) that only moe-bench links.
#include <cstddef>
#include <memory>
#include <string>

#include "moe/spec/dtype.hpp"

namespace moe::backends {

// C[M, N] = A[M, K] * B[N, K]^T (row-major, B transposed: the NK weight layout) through CLBlast
// on `device` (OpenclOptions::device's syntax). type f32: SGEMM; f16 and bf16: HGEMM where the
// device has cl_khr_fp16, else SGEMM (f32 math on widened data, as the opencl backend does);
// f64: DGEMM. Throws std::runtime_error with the reason when the device or CLBlast fails.
class OpenclGemmAnchor {
public:
    OpenclGemmAnchor(const std::string& device, std::size_t M, std::size_t N, std::size_t K, DType type);
    ~OpenclGemmAnchor();
    double seconds();  // one GEMM, device time (after a warm-up in the constructor)
    double flops() const;
    std::string routine() const;  // "SGEMM", "HGEMM" or "DGEMM"

private:
    struct State;
    std::unique_ptr<State> s_;
};

// A copy kernel over `bytes` (b = a, float4 per work-item) on `device`.
class OpenclCopyAnchor {
public:
    OpenclCopyAnchor(const std::string& device, std::size_t bytes);
    ~OpenclCopyAnchor();
    double seconds();      // one pass, device time
    double bytes() const;  // read plus written

private:
    struct State;
    std::unique_ptr<State> s_;
};

}  // namespace moe::backends
