#pragma once
// moe-bench's baselines for a backend that runs on an OpenCL device (the opencl backend): a
// CLBlast GEMM of the same FLOP count and a copy kernel on that device
// (moe/backends/opencl_anchors.hpp), as probes timed between the backend's repetitions.
#include <cstddef>
#include <string>

#include "moe/backends/opencl_anchors.hpp"
#include "moe/bench/machine_rates.hpp"

namespace moe::bench {

class DeviceGemmProbe : public Probe {
public:
    // C[M, N] = A[M, K] B[N, K]^T in the case's type (see OpenclGemmAnchor) on `device`.
    DeviceGemmProbe(const std::string& device, std::size_t M, std::size_t N, std::size_t K, DType type)
        : anchor_(device, M, N, K, type) {}
    double seconds() override { return anchor_.seconds(); }
    double work() const override { return anchor_.flops(); }
    std::string routine() const { return anchor_.routine(); }

private:
    backends::OpenclGemmAnchor anchor_;
};

class DeviceCopyProbe : public Probe {
public:
    DeviceCopyProbe(const std::string& device, std::size_t bytes) : anchor_(device, bytes) {}
    double seconds() override { return anchor_.seconds(); }
    double work() const override { return anchor_.bytes(); }  // read plus written

private:
    backends::OpenclCopyAnchor anchor_;
};

}  // namespace moe::bench
