#include "moe/bench/backend_timing.hpp"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "moe/generator/synthesize.hpp"
#include "moe/reference/interpreter.hpp"

namespace moe::bench {

namespace {

template <class F>
double seconds_of(F&& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

BenchRow time_backend(Backend& b, const Shape& s, std::size_t tokens, DType dtype, const std::string& routing,
                      Probe& gemm, Probe& bandwidth, const TimingOptions& o, const std::string& weights) {
    const Problem p = generator::synthesize(spec_for(s, tokens, dtype, routing, weights));
    BenchRow r;
    r.shape = s.name;
    r.dtype = std::string(dtype_name(dtype));
    r.routing = routing;
    r.weights = weights.empty() ? "" : compression_label(weights, s);
    r.backend = b.name();
    r.tokens = tokens;
    const int n = o.reps > 0 ? o.reps : (tokens <= 8 ? 20 : 5);
    r.prepare_seconds = seconds_of([&] { b.prepare(p); });  // once per problem, as at model load
    b.run(p, false);                                         // warm-up
    std::vector<double> t, t_gemm, t_read, t_device;
    std::vector<std::pair<double, std::map<std::string, double>>> by_run;  // (seconds, kernel times)
    for (int i = 0; i < n; ++i) {
        t.push_back(seconds_of([&] { b.run(p, false); }));
        // A backend that reports kernel times (a device queue's profiling) gets its device time
        // printed beside the wall time.
        if (auto kt = b.last_kernel_times(); !kt.empty()) {
            double sum = 0;
            for (const auto& [k, sec] : kt) sum += sec;
            t_device.push_back(sum);
            by_run.emplace_back(t.back(), std::move(kt));
        }
        if (o.interleave) {
            t_gemm.push_back(gemm.seconds());
            t_read.push_back(bandwidth.seconds());
        }
    }
    for (int i = 0; !o.interleave && i < n; ++i) t_gemm.push_back(gemm.seconds());
    for (int i = 0; !o.interleave && i < n; ++i) t_read.push_back(bandwidth.seconds());
    r.seconds = median(t);
    if (!by_run.empty()) {  // the kernel split of the median run
        std::sort(by_run.begin(), by_run.end(), [](const auto& a, const auto& c) { return a.first < c.first; });
        r.kernel_seconds = by_run[by_run.size() / 2].second;
    }
    r.gflops = moe_flops(s, tokens) / r.seconds / 1e9;
    r.device_seconds = median(t_device);
    r.gemm_gflops = gemm.work() / median(t_gemm) / 1e9;
    r.weight_gb = weight_bytes_touched(p) / 1e9;
    r.gbs = r.weight_gb / r.seconds;
    r.read_gbs = bandwidth.work() / median(t_read) / 1e9;
    if (o.vs_reference) r.reference_seconds = seconds_of([&] { reference::run(p); });
    return r;
}

}  // namespace moe::bench
