#pragma once
// What this machine can do, measured in the same run as the backend: a plain f32 GEMM with the
// cpu backend's engine, and streaming read bandwidth.
#include <cstddef>

namespace moe::bench {

// Both report the best of `reps` runs after a warm-up: what the machine can do. The backend's
// own figure is a median, so the ratios printed against these are conservative on a noisy host.

// GFLOP/s of C[M, N] = A[M, K] B^T (f32).
double gemm_gflops(std::size_t M, std::size_t N, std::size_t K, int threads, int reps);

// GB/s of reading a buffer of `bytes` (larger than the caches) with `threads` threads.
double read_bandwidth_gbs(std::size_t bytes, int threads, int reps);

}  // namespace moe::bench
