#include "moe/bench/bench_report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "moe/conformance/text_file.hpp"

namespace moe::bench {

void print_table_header(std::FILE* out, const std::string& backend, const std::string& description, int threads) {
    std::fprintf(out, "moe-bench: %s\n", description.c_str());
    std::fprintf(out,
                 "moe-bench: backend %s; machine figures with %d threads: a plain f32 GEMM of the same FLOP count (gemm) "
                 "and a 1 GiB streaming read (read; of_bw = GB/s over it), timed between the backend's repetitions; every "
                 "figure is a median (vs_ref: one run of the f64 reference); compressed rows end with their speedup over "
                 "this run's bf16 and f32 rows\n",
                 backend.c_str(), threads);
    std::fprintf(out, "%-14s %5s %-5s %-7s %-8s %10s %9s %9s %6s %9s %8s %8s %6s %8s\n", "shape", "T", "dtype", "wtype",
                 "routing", "median_ms", "GFLOP/s", "gemm", "ratio", "weights", "GB/s", "read", "of_bw", "vs_ref");
    std::fflush(out);  // before the first rows, which take seconds
}

void print_device_table_header(std::FILE* out, const std::string& backend, const std::string& description,
                               double copy_bytes) {
    std::fprintf(out, "moe-bench: %s\n", description.c_str());
    std::fprintf(out,
                 "moe-bench: backend %s; same-device figures, timed by the device after the backend's repetitions: a "
                 "CLBlast GEMM of the same FLOP count (gemm; M = T*K pairs, N = 3I, K = H, B transposed; routine in the last "
                 "column) and a copy kernel over %.0f MiB (copy: bytes read plus written). GFLOP/s, GB/s and their ratios "
                 "use the backend's device time (dev_ms, its kernels summed); wall/dev is its wall time over that; every "
                 "figure is a median\n",
                 backend.c_str(), copy_bytes / 2 / 1048576.0);
    std::fprintf(out, "%-14s %5s %-5s %-7s %-8s %9s %9s %8s %9s %9s %6s %9s %8s %8s %6s %7s %-6s\n", "shape", "T", "dtype",
                 "wtype", "routing", "wall_ms", "dev_ms", "wall/dev", "GFLOP/s", "gemm", "ratio", "weights", "GB/s", "copy", "of_bw",
                 "vs_ref", "gemm_is");
    std::fflush(out);
}

namespace {

// A figure of a table column: three significant digits below 10 (a small custom shape's 0.03
// GFLOP/s is not 0.0), one decimal above.
std::string figure(double v, int width) {
    char b[32];
    std::snprintf(b, sizeof b, std::fabs(v) < 10 ? "%*.3g" : "%*.1f", width, v);
    return b;
}

// Weight bytes as GB, or MB below 0.01 GB (a custom shape's 0.000GB says nothing).
std::string weight_bytes(double gb) {
    char b[32];
    if (gb >= 0.01) std::snprintf(b, sizeof b, "%7.3fGB", gb);
    else std::snprintf(b, sizeof b, "%7.3fMB", gb * 1e3);
    return b;
}

void print_device_row(std::FILE* out, const BenchRow& r, bool vs_reference) {
    const double dev = r.device_seconds > 0 ? r.device_seconds : r.seconds;
    const double gflops = r.gflops * r.seconds / dev, gbs = r.weight_gb / dev;
    std::fprintf(out, "%-14s %5zu %-5s %-7s %-8s %9.3f %9.3f %8.2f %s %s %6.2f %s %s %s %6.2f", r.shape.c_str(), r.tokens,
                 r.dtype.c_str(), r.weights.empty() ? r.dtype.c_str() : r.weights.c_str(), r.routing.c_str(),
                 r.seconds * 1e3, dev * 1e3, r.seconds / dev, figure(gflops, 9).c_str(), figure(r.gemm_gflops, 9).c_str(),
                 gflops / r.gemm_gflops, weight_bytes(r.weight_gb).c_str(), figure(gbs, 8).c_str(),
                 figure(r.read_gbs, 8).c_str(), gbs / r.read_gbs);
    if (vs_reference) std::fprintf(out, " %6.1fx", r.reference_seconds / r.seconds);
    else std::fprintf(out, " %7s", "-");
    std::fprintf(out, " %-6s\n", r.gemm_routine.c_str());
}

}  // namespace

void print_table_row(std::FILE* out, const BenchRow& r, bool vs_reference) {
    if (r.same_device) {
        print_device_row(out, r, vs_reference);
    } else {
        std::fprintf(out, "%-14s %5zu %-5s %-7s %-8s %10.3f %s %s %6.2f %s %s %s %6.2f", r.shape.c_str(), r.tokens,
                     r.dtype.c_str(), r.weights.empty() ? r.dtype.c_str() : r.weights.c_str(), r.routing.c_str(),
                     r.seconds * 1e3, figure(r.gflops, 9).c_str(), figure(r.gemm_gflops, 9).c_str(),
                     r.gflops / r.gemm_gflops, weight_bytes(r.weight_gb).c_str(), figure(r.gbs, 8).c_str(),
                     figure(r.read_gbs, 8).c_str(), r.gbs / r.read_gbs);
        if (vs_reference) std::fprintf(out, " %7.1fx", r.reference_seconds / r.seconds);
        else std::fprintf(out, " %8s", "-");  // the vs_ref column, so that the speedups stand after it
        // Compressed rows: the speedup over the same shape with bf16 and f32 weights (this run's rows).
        if (r.bf16_seconds > 0) std::fprintf(out, "  %.2fx vs bf16", r.bf16_seconds / r.seconds);
        if (r.f32_seconds > 0) std::fprintf(out, "  %.2fx vs f32", r.f32_seconds / r.seconds);
        std::fprintf(out, "\n");
    }
    if (!r.kernel_seconds.empty()) {
        double sum = 0;
        for (const auto& [k, sec] : r.kernel_seconds) sum += sec;
        std::fprintf(out, "  kernels (median run, device time %.3f ms of %.3f ms):", sum * 1e3, r.seconds * 1e3);
        for (const auto& [k, sec] : r.kernel_seconds)
            std::fprintf(out, " %s %.3f ms (%.0f%%)", k.c_str(), sec * 1e3, sum > 0 ? 100 * sec / sum : 0.0);
        std::fprintf(out, "\n");
    }
    std::fflush(out);
}

void print_skipped_row(std::FILE* out, const BenchRow& r) {
    std::fprintf(out, "%-14s %5zu %-5s %-7s %-8s   skipped: %s: not supported: %s\n", r.shape.c_str(), r.tokens,
                 r.dtype.c_str(), r.weights.empty() ? r.dtype.c_str() : r.weights.c_str(), r.routing.c_str(),
                 r.backend.c_str(), r.not_supported.c_str());
    std::fflush(out);
}

std::string row_json(const BenchRow& r) {
    nlohmann::json row = {{"shape", r.shape}, {"tokens", r.tokens}, {"dtype", r.dtype},
                          {"weights", r.weights.empty() ? r.dtype : r.weights}, {"routing", r.routing},
                          {"bf16_seconds", r.bf16_seconds}, {"f32_seconds", r.f32_seconds}, {"backend", r.backend},
                          {"median_seconds", r.seconds}, {"run_seconds", r.run_seconds},
                          {"min_seconds", r.run_seconds.empty() ? r.seconds : *std::min_element(r.run_seconds.begin(), r.run_seconds.end())},
                          {"max_seconds", r.run_seconds.empty() ? r.seconds : *std::max_element(r.run_seconds.begin(), r.run_seconds.end())},
                          {"prepare_seconds", r.prepare_seconds},
                          {"gflops", r.gflops}, {"gemm_gflops", r.gemm_gflops}, {"weight_gb", r.weight_gb},
                          {"gbs", r.gbs}, {"read_gbs", r.read_gbs}, {"reference_seconds", r.reference_seconds},
                          {"kernel_seconds", r.kernel_seconds}, {"device_seconds", r.device_seconds},
                          {"same_device_baselines", r.same_device}, {"gemm_routine", r.gemm_routine}};
    if (r.same_device) {
        // The table's figures use the device time; gflops and gbs stay the wall-time ones, as on
        // every other row. read_gbs holds the copy kernel's rate (bytes read plus written).
        const double dev = r.device_seconds > 0 ? r.device_seconds : r.seconds;
        row["device_gflops"] = r.gflops * r.seconds / dev;
        row["device_gbs"] = r.weight_gb / dev;
        row["copy_gbs"] = r.read_gbs;
        row.erase("read_gbs");
    }
    return row.dump();  // one line: dump() without an indent escapes every newline in a string
}

void write_rows_json(const std::string& file, const std::vector<std::string>& rows) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : rows) j.push_back(nlohmann::json::parse(r));
    conformance::write_file_atomically(file, j.dump(2) + "\n");
}

}  // namespace moe::bench
