#include "cl_tune.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <vector>

#include "cl_runtime.hpp"
#include "environment_setting.hpp"
#include "whole_file.hpp"

namespace moe::backends::ocl {

namespace fs = std::filesystem;

namespace {

std::mutex g_mutex;
std::map<std::string, std::string>& memory_cache() {  // device key -> tiled_key()
    static std::map<std::string, std::string> m;
    return m;
}
std::map<std::string, std::string>& reports() {  // device key -> what the tune measured
    static std::map<std::string, std::string> m;
    return m;
}

// Name and driver version: a new driver may compile the kernels differently, so it tunes again.
std::string device_key(const DeviceInfo& d) { return d.name + "\t" + d.driver_version; }

std::optional<fs::path> cache_file() {
    // Kernels replaced from MOE_OPENCL_KERNEL_DIR tune for themselves: their choice must not be
    // kept for the embedded kernels, nor the embedded kernels' choice used for them.
    if (environment_setting("MOE_OPENCL_KERNEL_DIR")) return std::nullopt;
    if (const char* v = std::getenv("MOE_OPENCL_TUNE_CACHE")) {
        if (std::string(v) == "off" || !*v) return std::nullopt;
        return fs::path(v);
    }
    if (const auto x = environment_setting("XDG_CACHE_HOME")) return fs::path(*x) / "moe-conform" / "opencl-tune.txt";
    if (const auto h = environment_setting("HOME")) return fs::path(*h) / ".cache" / "moe-conform" / "opencl-tune.txt";
    return std::nullopt;
}

// The file's lines: device name, TAB, driver version, TAB, tiled_key().
std::map<std::string, std::string> read_file_cache(const fs::path& f) {
    std::map<std::string, std::string> m;
    std::ifstream in(f);
    std::string line;
    while (std::getline(in, line)) {
        const auto tab = line.rfind('\t');
        if (tab != std::string::npos && line.find('\t') < tab) m[line.substr(0, tab)] = line.substr(tab + 1);
    }
    return m;
}

// Best effort: a cache that cannot be written only costs a tune in the next process.
void write_file_cache(const fs::path& f, const std::string& key, const std::string& value) {
    auto m = read_file_cache(f);
    m[key] = value;
    std::error_code ec;
    fs::create_directories(f.parent_path(), ec);
    std::string text;
    for (const auto& [k, v] : m) text += k + "\t" + v + "\n";
    write_whole_file(f, text);
}

// The trial GEMM: 8 experts x 512 rows, N = 4096, K = 2048 (full tiles, the prefill case the
// tiled kernel exists for; about a thousand 128 x 128 tiles, several waves on a large GPU).
constexpr std::uint32_t kE = 8, kR = 512, kN = 4096, kK = 2048;

// Seconds of the fastest of 3 launches of moe_gemm_f32_kn with config c on the trial GEMM;
// nullopt when the kernel cannot run its work-group.
std::optional<double> time_candidate(const Runtime& rt, const GemmConfig& c) {
    const Program prog =
        rt.compile({"common.cl", "gemm.cl", "gemm_gpu.cl", "gemm_kernels.cl"},
                   c.defines() + " -DMOE_GEMM_TUNE_ONLY");
    cl_kernel k = prog.find("moe_gemm_f32_kn");
    std::size_t kwg = 0;
    if (k) clGetKernelWorkGroupInfo(k, rt.device().device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg, nullptr);
    if (kwg < std::size_t(c.tiled.lx) * c.tiled.ly) return std::nullopt;
    const std::uint32_t E = kE, R = kR, N = kN, K = kK, tm = c.tiled_tm();
    const std::size_t pad = c.pad_elems() * sizeof(float);
    Buffer A = rt.buffer(std::size_t(E) * R * K * sizeof(float), nullptr, pad);
    Buffer W = rt.buffer(std::size_t(E) * K * N * sizeof(float), nullptr, pad);
    Buffer C = rt.buffer(std::size_t(E) * R * N * sizeof(float));
    const float pattern[4] = {0.5f, -0.25f, 0.125f, 1.0f};  // not zeros: timing on zeros can flatter
    for (const Buffer* b : {&A, &W})
        check(clEnqueueFillBuffer(rt.queue(), b->get(), pattern, sizeof pattern, 0, b->bytes() / 16 * 16, 0, nullptr,
                                  nullptr),
              "clEnqueueFillBuffer");
    std::vector<std::uint32_t> tiles;
    for (std::uint32_t e = 0; e < E; ++e)
        for (std::uint32_t r = 0; r < R; r += tm) tiles.insert(tiles.end(), {e, e * R + r, e * R + r, tm});
    Buffer table = rt.buffer(tiles.size() * sizeof(std::uint32_t), tiles.data());
    const cl_mem a = A.get(), w = W.get(), cm = C.get(), t = table.get();
    const cl_uint zero = 0, n = N, kk = K;
    const cl_int no = 0;
    const std::pair<std::size_t, const void*> args[] = {{sizeof a, &a},   {sizeof t, &t},   {sizeof zero, &zero},
                                                         {sizeof n, &n},   {sizeof kk, &kk}, {sizeof w, &w},
                                                         {sizeof w, &w},   {sizeof no, &no}, {sizeof no, &no},
                                                         {sizeof cm, &cm}};
    for (cl_uint i = 0; i < 10; ++i) check(clSetKernelArg(k, i, args[i].first, args[i].second), "clSetKernelArg");
    const std::size_t global[2] = {N / c.tiled_tn() * c.tiled.lx, tiles.size() / 4 * c.tiled.ly},
                      local[2] = {c.tiled.lx, c.tiled.ly};
    double best = 1e300;
    for (int rep = 0; rep < 4; ++rep) {  // the first is a warm-up
        cl_event ev = nullptr;
        check(clEnqueueNDRangeKernel(rt.queue(), k, 2, nullptr, global, local, 0, nullptr, &ev), "clEnqueueNDRangeKernel");
        check(clWaitForEvents(1, &ev), "clWaitForEvents");
        cl_ulong s = 0, e = 0;
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof s, &s, nullptr);
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof e, &e, nullptr);
        clReleaseEvent(ev);
        if (rep > 0 && e > s) best = std::min(best, double(e - s) * 1e-9);
    }
    return best;
}

}  // namespace

GemmConfig gemm_config_for(const Runtime& rt) {
    const DeviceInfo& d = rt.device();
    if ((d.type & CL_DEVICE_TYPE_CPU) || environment_setting("MOE_OPENCL_GEMM")) return choose_gemm_config(d);
    const std::string key = device_key(d);
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto from_key = [&](const std::string& k) { return gemm_config_from_key(d, k); };
    if (auto it = memory_cache().find(key); it != memory_cache().end())
        if (auto c = from_key(it->second)) return *c;
    const auto file = cache_file();
    if (file) {
        const auto m = read_file_cache(*file);
        if (auto it = m.find(key); it != m.end())
            if (auto c = from_key(it->second)) {
                memory_cache()[key] = it->second;
                return *c;
            }
    }
    const auto candidates = gemm_candidates(d);
    if (candidates.empty()) return choose_gemm_config(d);
    std::ostringstream report;
    std::optional<GemmConfig> best;
    double best_s = 1e300;
    for (const auto& c : candidates) {
        std::optional<double> s;
        try {
            s = time_candidate(rt, c);
        } catch (const ClError& e) {  // a shape this driver cannot build or run: not a candidate
            report << (report.tellp() > 0 ? ", " : "") << c.tiled_key() << ": " << e.what();
            continue;
        }
        char line[160];
        std::snprintf(line, sizeof line, "%s%ux%u k%u wg%u %s", report.tellp() > 0 ? ", " : "", c.tiled_tm(),
                      c.tiled_tn(), c.tiled.tk, c.tiled.lx * c.tiled.ly,
                      s ? (std::to_string(int(2.0 * kE * kR * kN * kK / *s / 1e9)) + " GFLOP/s").c_str()
                        : "(work-group too large for the kernel)");
        report << line;
        if (s && *s < best_s) {
            best_s = *s;
            best = c;
        }
    }
    if (!best) return choose_gemm_config(d);
    reports()[key] = report.str();
    memory_cache()[key] = best->tiled_key();
    if (file) write_file_cache(*file, key, best->tiled_key());
    return *best;
}

std::string tune_report(const DeviceInfo& d) {
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = reports().find(device_key(d));
    return it == reports().end() ? std::string() : it->second;
}

}  // namespace moe::backends::ocl
