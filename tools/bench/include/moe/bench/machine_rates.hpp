#pragma once
// What this machine can do, measured in the same run as the backend: a plain f32 GEMM with the
// cpu backend's engine, and streaming read bandwidth. moe-bench times them interleaved with the
// backend's repetitions (backend, GEMM, read, backend, ...) and compares medians, so that every
// ratio sees the same states of a noisy host (a shared second vCPU moves the 2-thread read
// bandwidth between about 40 and 77 GB/s from one minute to the next).
#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

namespace moe::bench {

// A baseline timed between the backend's repetitions: the seconds of one pass, and the work one
// pass does (FLOPs of a GEMM, bytes of a streaming pass).
class Probe {
public:
    virtual ~Probe() = default;
    virtual double seconds() = 0;
    virtual double work() const = 0;
};

// C[M, N] = A[M, K] B^T (f32), B an [N, K] matrix, with the better of the engine's two ways of
// reading the weights (in place, or packed once into the library's layout as the cpu backend's
// prepare() does; chosen by a best-of-3 after a warm-up).
class GemmProbe : public Probe {
public:
    GemmProbe(std::size_t M, std::size_t N, std::size_t K, int threads);
    ~GemmProbe() override;
    double seconds() override;  // one timed GEMM
    double flops() const;
    double work() const override { return flops(); }

private:
    struct State;
    std::unique_ptr<State> s_;
};

// Reading a buffer of `bytes` (larger than the caches) with `threads` threads.
class ReadProbe : public Probe {
public:
    ReadProbe(std::size_t bytes, int threads);
    double seconds() override;  // one timed pass
    double bytes() const { return static_cast<double>(buf_.size() * sizeof(float)); }
    double work() const override { return bytes(); }

private:
    std::vector<float> buf_;
    int threads_;
};

double median(std::vector<double> v);

// Wall-clock seconds of one call of f (a steady clock).
template <class F>
double seconds_of(F&& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace moe::bench
