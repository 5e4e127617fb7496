#pragma once
// moe-bench's measurement of a backend: prepare() once, a warm-up run, then repetitions of
// run() interleaved with the machine probes (backend, GEMM, read, backend, ...), each figure the
// median of its repetitions, so that every ratio sees the same states of a noisy host.
#include <cstddef>
#include <map>
#include <string>

#include "moe/bench/machine_rates.hpp"
#include "moe/bench/shapes.hpp"
#include "moe/spec/backend.hpp"

namespace moe::bench {

struct BenchRow {
    std::string shape, dtype, routing, backend;
    std::size_t tokens = 0;
    double seconds = 0;            // median wall time of run()
    double prepare_seconds = 0;    // prepare(), once
    double gflops = 0;             // the three projections' FLOPs over `seconds`
    double gemm_gflops = 0;        // the same-run plain GEMM of the same FLOP count
    double weight_gb = 0, gbs = 0;  // weight bytes the routing touches, and their rate
    double read_gbs = 0;           // the same-run streaming read
    double reference_seconds = 0;  // the f64 reference once (when asked)
    std::map<std::string, double> kernel_seconds;  // device time per kernel of the median run, if reported
};

struct TimingOptions {
    int reps = 0;              // 0: 20 for decode (T <= 8), 5 for prefill
    bool vs_reference = false;  // also time the f64 reference once
};

// Times `b` on the synthetic problem of (s, tokens, dtype, routing).
BenchRow time_backend(Backend& b, const Shape& s, std::size_t tokens, DType dtype, const std::string& routing,
                      GemmProbe& gemm, ReadProbe& read, const TimingOptions& o);

}  // namespace moe::bench
