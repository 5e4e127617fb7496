#pragma once
// moe-bench's measurement of a backend: prepare() once, a warm-up run, then repetitions of
// run() interleaved with the machine probes (backend, GEMM, read, backend, ...) or followed by
// them (TimingOptions::interleave), each figure the
// median of its repetitions, so that every ratio sees the same states of a noisy host.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "moe/bench/machine_rates.hpp"
#include "moe/bench/shapes.hpp"
#include "moe/spec/backend.hpp"

namespace moe::bench {

struct BenchRow {
    std::string shape, dtype, routing, backend;
    std::string weights;           // "" (weights in the data type) or a compressed preset (--weights)
    std::size_t tokens = 0;
    double seconds = 0;            // median wall time of run()
    // Every timed run's wall time, in the order of the rounds: a CI tracking speed across commits
    // judges a change against the spread, which a median alone hides.
    std::vector<double> run_seconds;
    double prepare_seconds = 0;    // prepare(), once
    double gflops = 0;             // the three projections' FLOPs over `seconds`
    double gemm_gflops = 0;        // the same-run plain GEMM of the same FLOP count
    double weight_gb = 0, gbs = 0;  // weight bytes the routing touches, and their rate
    double read_gbs = 0;           // the same-run streaming read
    double reference_seconds = 0;  // the f64 reference once (when asked)
    std::map<std::string, double> kernel_seconds;  // device time per kernel of the median run, if reported
    double device_seconds = 0;     // median over the runs of their summed kernel times (0: not reported)
    // The baselines ran on the backend's device (a library GEMM and a copy kernel timed by the
    // device): the ratios then compare device times, gemm_gflops and read_gbs are the device's.
    bool same_device = false;
    std::string gemm_routine;  // same_device: the library routine of the GEMM baseline ("SGEMM")
    // Compressed rows: the time of the same shape and T with bf16 and with f32 weights and data,
    // when those rows ran in the same invocation (0 otherwise).
    double bf16_seconds = 0, f32_seconds = 0;
    // Not empty: the backend declined the row's problem (supports()), with this reason, and the
    // row was not timed (its figures are 0). A kernel run on a problem it declined crashed or
    // wrote past its output, and a time for it would mean nothing.
    std::string not_supported;
};

struct TimingOptions {
    int reps = 0;              // 0: 20 for decode (T <= 8), 5 for prefill
    bool vs_reference = false;  // also time the f64 reference once
    // Probes between the backend's repetitions (backend, GEMM, read, backend, ...), or after all
    // of them (a GPU would otherwise switch from the baselines' context to the backend's at the
    // start of every timed run and charge the switch, about 0.1 ms on an H100, to the backend).
    bool interleave = true;
};

// One row of a group timed together: a backend instance of its own (prepare() state is per
// instance), the data type and the compressed preset ("" for none).
struct RowRequest {
    Backend* backend = nullptr;
    DType dtype = DType::f32;
    std::string weights;
};

// Times every request on its synthetic problem of (s, tokens, routing) in rounds: each row once,
// then the probes (or the probes after all rounds, TimingOptions::interleave), so that the ratios
// between the rows (a compressed row's speedup over bf16) compare times taken in the same
// stretch of time. All the rows' problems are held at once, but for those the backend declines
// (BenchRow::not_supported: asked as each problem is made, dropped then, never prepared or run).
std::vector<BenchRow> time_backends_together(const std::vector<RowRequest>& requests, const Shape& s,
                                             std::size_t tokens, const std::string& routing, Probe& gemm,
                                             Probe& bandwidth, const TimingOptions& o);

// Times `b` on the synthetic problem of (s, tokens, dtype, routing), its weights compressed as the
// preset `weights` says ("" for none), `gemm` (a GEMM of the same FLOP count) and `bandwidth` (a
// streaming pass) between its repetitions.
BenchRow time_backend(Backend& b, const Shape& s, std::size_t tokens, DType dtype, const std::string& routing,
                      Probe& gemm, Probe& bandwidth, const TimingOptions& o, const std::string& weights = "");

}  // namespace moe::bench
