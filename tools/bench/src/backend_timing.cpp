#include "moe/bench/backend_timing.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "moe/generator/synthesize.hpp"
#include "moe/reference/interpreter.hpp"

namespace moe::bench {

namespace {

// "f32", or "bf16 u4": a row as the progress lines name it.
std::string kind_label(const RowRequest& q) {
    return std::string(dtype_name(q.dtype)) + (q.weights.empty() ? "" : " " + q.weights);
}

// A row the backend declines, said under the progress line that named it, as soon as supports()
// answers: that line promised timed rounds, and the row's table line comes only once every data
// type of the shape and T has run.
void say_declined(const Shape& s, std::size_t tokens, const RowRequest& q, const BenchRow& r) {
    std::fprintf(stderr, "moe-bench: %s, T = %zu: %s not timed: %s does not support it: %s\n", s.name.c_str(), tokens,
                 kind_label(q).c_str(), r.backend.c_str(), r.not_supported.c_str());
}

}  // namespace

std::vector<BenchRow> time_backends_together(const std::vector<RowRequest>& requests, const Shape& s,
                                             std::size_t tokens, const std::string& routing, Probe& gemm,
                                             Probe& bandwidth, const TimingOptions& o) {
    const std::size_t rows_n = requests.size();
    const int n = o.reps > 0 ? o.reps : (tokens <= 8 ? 20 : 5);
    // Progress on stderr (stdout holds the table): a model shape's problems take seconds to make
    // and its rows are printed only once every data type of the shape and T has run.
    std::string kinds;
    for (const RowRequest& q : requests) kinds += (kinds.empty() ? "" : ", ") + kind_label(q);
    std::fprintf(stderr, "moe-bench: %s, T = %zu: making the problems (%s), then %d timed rounds\n", s.name.c_str(),
                 tokens, kinds.c_str(), n);
    std::vector<Problem> problems;
    std::vector<BenchRow> rows(rows_n);
    for (std::size_t j = 0; j < rows_n; ++j) {
        const RowRequest& q = requests[j];
        problems.push_back(generator::synthesize(spec_for(s, tokens, q.dtype, routing, q.weights)));
        BenchRow& r = rows[j];
        r.shape = s.name;
        r.dtype = std::string(dtype_name(q.dtype));
        r.routing = routing;
        r.weights = q.weights.empty() ? "" : compression_label(q.weights, s);
        r.backend = q.backend->name();
        r.tokens = tokens;
        // As moe-conform run asks before it runs a case: a problem the backend declines is not
        // run (nor held: the rows that are timed may need the memory).
        if (const Support support = q.backend->supports(problems.back()); !support.supported) {
            r.not_supported = support.reason.empty() ? "(no reason given)" : support.reason;
            problems.back() = Problem{};
            say_declined(s, tokens, q, r);
        }
    }
    std::vector<std::size_t> timed;  // the rows the backend supports
    for (std::size_t j = 0; j < rows_n; ++j)
        if (rows[j].not_supported.empty()) timed.push_back(j);
    if (timed.empty()) return rows;  // nothing to time, nor to compare with
    for (const std::size_t j : timed) {
        Backend& b = *requests[j].backend;
        rows[j].prepare_seconds = seconds_of([&] { b.prepare(problems[j]); });  // once per problem, as at model load
        b.run(problems[j], false);                                              // warm-up
    }
    std::vector<std::vector<double>> t(rows_n), t_device(rows_n);
    std::vector<std::vector<std::pair<double, std::map<std::string, double>>>> by_run(rows_n);  // (seconds, kernel times)
    std::vector<double> t_gemm, t_read;
    // Round by round: every row once, then the probes, so that each row's median and the probes'
    // come from the same stretch of time (this host's read bandwidth changes by 1.7x between
    // stretches of seconds: rows timed one after another would compare different machines).
    for (int i = 0; i < n; ++i) {
        for (const std::size_t j : timed) {
            Backend& b = *requests[j].backend;
            t[j].push_back(seconds_of([&] { b.run(problems[j], false); }));
            // A backend that reports kernel times (a device queue's profiling) gets its device time
            // printed beside the wall time.
            if (auto kt = b.last_kernel_times(); !kt.empty()) {
                double sum = 0;
                for (const auto& [k, sec] : kt) sum += sec;
                t_device[j].push_back(sum);
                by_run[j].emplace_back(t[j].back(), std::move(kt));
            }
        }
        if (o.interleave) {
            t_gemm.push_back(gemm.seconds());
            t_read.push_back(bandwidth.seconds());
        }
    }
    for (int i = 0; !o.interleave && i < n; ++i) t_gemm.push_back(gemm.seconds());
    for (int i = 0; !o.interleave && i < n; ++i) t_read.push_back(bandwidth.seconds());
    for (const std::size_t j : timed) {
        BenchRow& r = rows[j];
        r.seconds = median(t[j]);
        r.run_seconds = t[j];
        if (!by_run[j].empty()) {  // the kernel split of the median run
            std::sort(by_run[j].begin(), by_run[j].end(), [](const auto& a, const auto& c) { return a.first < c.first; });
            r.kernel_seconds = by_run[j][by_run[j].size() / 2].second;
        }
        r.gflops = moe_flops(s, tokens) / r.seconds / 1e9;
        r.device_seconds = median(t_device[j]);
        r.gemm_gflops = gemm.work() / median(t_gemm) / 1e9;
        r.weight_gb = weight_bytes_touched(problems[j]) / 1e9;
        r.gbs = r.weight_gb / r.seconds;
        r.read_gbs = bandwidth.work() / median(t_read) / 1e9;
        if (o.vs_reference) r.reference_seconds = seconds_of([&] { reference::run(problems[j]); });
    }
    return rows;
}

BenchRow time_backend(Backend& b, const Shape& s, std::size_t tokens, DType dtype, const std::string& routing,
                      Probe& gemm, Probe& bandwidth, const TimingOptions& o, const std::string& weights) {
    return time_backends_together({RowRequest{&b, dtype, weights}}, s, tokens, routing, gemm, bandwidth, o).front();
}

}  // namespace moe::bench
