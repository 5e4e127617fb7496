#include "cl_runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <vector>

#include "cl_tune.hpp"
#include "element_codes.hpp"
#include "environment_setting.hpp"
#include "kernel_override.hpp"
#include "opencl_kernels.hpp"  // generated at configure time from kernels/*.cl
#include "program_dump.hpp"

namespace moe::backends::ocl {

namespace {
// The f32 program, the compressed-weight GEMMs and the f64 program, in build order (common.cl
// first: shared helpers).
const std::vector<std::string> kMainFiles = {"common.cl",   "activation.cl",   "mask_gen.cl", "gather.cl",        "gemm.cl",
                                             "gemm_gpu.cl", "gemm_kernels.cl", "swiglu.cl",   "scatter_reduce.cl"};
const std::vector<std::string> kCompressedFiles = {"common.cl", "compressed_values.cl", "gemm.cl", "gemm_gpu.cl",
                                                   "gemm_compressed.cl"};
const std::vector<std::string> kF64Files = {"common.cl", "f64.cl"};

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::size_t kernel_work_group(cl_kernel k, cl_device_id d) {
    std::size_t wg = 0;
    check(clGetKernelWorkGroupInfo(k, d, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, nullptr),
          "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)");
    return wg;
}

// MOE_OPENCL_KERNEL_WG_CAP=PREFIX=N: kernels whose names start with PREFIX are taken to accept at
// most N work-items a group. Stands in, on PoCL, for a GPU driver that compiles a kernel for fewer
// work-items than the device takes (registers), which no CPU device does (tests only).
std::size_t capped(const std::string& kernel, std::size_t wg) {
    const auto v = environment_setting("MOE_OPENCL_KERNEL_WG_CAP");
    if (!v) return wg;
    const std::string& cap = *v;
    const auto eq = cap.rfind('=');
    if (eq == std::string::npos || kernel.compare(0, eq, cap, 0, eq) != 0) return wg;
    return std::min<std::size_t>(wg, std::strtoull(cap.c_str() + eq + 1, nullptr, 10));
}

// The smallest limit of the named kernels of p (no more than `start`).
std::size_t least_limit(const Program& p, std::initializer_list<const char*> names, std::size_t start) {
    for (const char* k : names) start = std::min(start, p.limit(k));
    return start;
}
}  // namespace

std::string CompressedTypes::suffix() const {
    const auto name = [](std::int32_t code) { return std::string(elem_type_name(code)); };
    return "_" + name(weight) + "_" + name(scale) + (zero >= 0 ? "_" + name(zero) : "");
}

std::string CompressedTypes::describe() const {
    const auto name = [](std::int32_t code) { return std::string(elem_type_name(code)); };
    return name(weight) + ", " + name(scale) + " scales" + (zero >= 0 ? ", " + name(zero) + " zero points" : "");
}

Pinned::~Pinned() {
    if (ptr_) {
        clEnqueueUnmapMemObject(queue_, buf_.get(), ptr_, 0, nullptr, nullptr);
        clFinish(queue_);
    }
}

Program::~Program() {
    for (auto& [name, k] : kernels_) clReleaseKernel(k);
    if (program_) clReleaseProgram(program_);
}

cl_kernel Program::find(const std::string& name) const {
    const auto it = kernels_.find(name);
    return it == kernels_.end() ? nullptr : it->second;
}

std::size_t Program::limit(const std::string& name) const {
    const auto it = limits_.find(name);
    return it == limits_.end() ? 0 : it->second;
}

Runtime::Runtime(const DeviceInfo& device) : device_(device) {
    cl_int rc = CL_SUCCESS;
    const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(device.platform), 0};
    context_ = clCreateContext(props, 1, &device_.device, nullptr, nullptr, &rc);
    check(rc, "clCreateContext");
    // Profiling on: moe-bench reports the time of each kernel (take_kernel_times).
    const cl_queue_properties qprops[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    queue_ = clCreateCommandQueueWithProperties(context_, device_.device, qprops, &rc);
    if (rc != CL_SUCCESS) {
        clReleaseContext(context_);
        throw ClError("clCreateCommandQueueWithProperties", rc);
    }
}

Runtime::~Runtime() {
    for (auto& [name, e] : events_) clReleaseEvent(e);
    main_ = Program();
    compressed_.clear();
    f64_ = Program();
    if (queue_) clReleaseCommandQueue(queue_);
    if (context_) clReleaseContext(context_);
}

void Runtime::build(const std::string& defines) {
    if (main_.built()) return;
    const auto t0 = std::chrono::steady_clock::now();
    gemm_ = gemm_config_for(*this);
    const double tune_s = seconds_since(t0);
    const auto options = [&] { return gemm_.defines() + (defines.empty() ? std::string() : " " + defines); };
    main_ = compile(kMainFiles, options());
    // A kernel may accept smaller work-groups than the device (registers, local memory): the
    // GEMM kernels require theirs exactly (reqd_work_group_size), so rebuild smaller if needed.
    const std::size_t kernel_wg = least_limit(
        main_, {"moe_gemm_f32_kn", "moe_gemm_small_f32_kn", "moe_gemm_rows_f32_nk", "moe_gemm_rows_f32_kn"},
        device_.max_work_group);
    const std::size_t need = std::max({std::size_t(gemm_.tiled.lx) * gemm_.tiled.ly,
                                       std::size_t(gemm_.small.lx) * gemm_.small.ly, gemm_.rows_nk_wg(),
                                       std::size_t(gemm_.rows.lx)});
    if (kernel_wg < need) {
        gemm_ = choose_gemm_config(device_, kernel_wg);
        main_ = compile(kMainFiles, options());
    }
    options_ = options();
    build_seconds_.emplace_back("f32 program", seconds_since(t0));
    tune_seconds_ = tune_s;
}

const CompressedGemms& Runtime::build_compressed(const CompressedTypes& types) {
    if (const auto it = compressed_.find(types); it != compressed_.end()) return it->second;
    if (!main_.built()) build();
    const auto t0 = std::chrono::steady_clock::now();
    CompressedGemms g;
    g.suffix = types.suffix();
    // The types as constants (kernels/gemm_compressed.cl), and the kernel names' suffix.
    const std::string options = options_ + " -DMOE_CW=" + std::to_string(types.weight) +
                                " -DMOE_CS=" + std::to_string(types.scale) + " -DMOE_CZ=" + std::to_string(types.zero) +
                                " -DMOE_CV=" + g.suffix;
    if (!gemm_.wide) {
        g.program = compile(kCompressedFiles, options);
    } else {
        // The GPU bodies' kernels require their work-groups exactly (reqd_work_group_size):
        // moe_gemm_compressed_rows* MOE_CR_WG work-items (128, else the largest of 64 and 32 the
        // device and the compiled kernels take; none: the rows tiles go to moe_gemm_compressed),
        // moe_gemm_compressed_tiled the tiled shape's (else moe_gemm_compressed, which takes any).
        const std::size_t device_wg = std::min(device_.max_work_group, device_.max_item_sizes[0]);
        std::uint32_t wg = 128;
        while (wg > 32 && wg > device_wg) wg /= 2;
        const auto rows_limit = [&] {
            std::size_t most = device_wg;
            for (const char* rows : {"1", "2", "4", "8"})
                most = std::min(most, g.program.limit(g.kernel(std::string("moe_gemm_compressed_rows") + rows)));
            return most;
        };
        g.program = compile(kCompressedFiles, options + " -DMOE_CR_WG=" + std::to_string(wg));
        while (wg > 32 && rows_limit() < wg) {
            wg /= 2;
            g.program = compile(kCompressedFiles, options + " -DMOE_CR_WG=" + std::to_string(wg));
        }
        g.rows_wg = rows_limit() >= wg ? wg : 0;
        g.tiled = g.program.limit(g.kernel("moe_gemm_compressed_tiled")) >= std::size_t(gemm_.tiled.lx) * gemm_.tiled.ly;
    }
    // The build report says where the device made the GPU bodies give way.
    std::string what = "compressed-weight GEMMs";
    if (gemm_.wide && g.rows_wg != 128)
        what += g.rows_wg ? " (rows work-group " + std::to_string(g.rows_wg) + ")" : std::string(" (no rows kernels)");
    if (gemm_.wide && !g.tiled) what += " (tiles on moe_gemm_compressed)";
    what += " [" + types.describe() + "]";
    build_seconds_.emplace_back(what, seconds_since(t0));
    return compressed_.emplace(types, std::move(g)).first->second;
}

const CompressedGemms& Runtime::compressed(const CompressedTypes& types) const {
    const auto it = compressed_.find(types);
    if (it == compressed_.end())
        throw std::logic_error("opencl: the compressed-weight GEMMs for " + types.describe() + " are not built");
    return it->second;
}

bool Runtime::build_f64() {
    if (!f64_.built() && device_.fp64) {
        const auto t0 = std::chrono::steady_clock::now();
        // moe_gemm_f64 requires a square work-group: 16 x 16 where the device allows 256
        // work-items, else the largest power of two whose square it allows (devices limited to
        // fewer, or a kernel the compiler gives fewer: rebuilt smaller).
        const auto side_for = [&](std::size_t items) {
            std::uint32_t t = 16;
            while (t > 1 && (std::size_t(t) * t > items || t > device_.max_item_sizes[0] || t > device_.max_item_sizes[1]))
                t /= 2;
            return t;
        };
        const auto options = [](std::uint32_t t) { return "-DMOE_F64_T=" + std::to_string(t); };
        std::uint32_t t = side_for(device_.max_work_group);
        f64_ = compile(kF64Files, options(t));
        if (const std::size_t kwg = f64_.limit("moe_gemm_f64"); std::size_t(t) * t > kwg) {
            t = side_for(kwg);
            f64_ = compile(kF64Files, options(t));
        }
        gemm_.f64_tile = t;
        build_seconds_.emplace_back("f64 program", seconds_since(t0));
    }
    return f64_.built();
}

std::string Runtime::build_report() const {
    std::string s;
    for (const auto& [what, sec] : build_seconds_) {
        char line[160];
        std::snprintf(line, sizeof line, "%s%s %.2f s", s.empty() ? "" : ", ", what.c_str(), sec);
        s += line;
        // The autotune runs inside the f32 program's build, on a GPU whose choice is not cached.
        if (what == "f32 program" && tune_seconds_ >= 0.01) {
            std::snprintf(line, sizeof line, " (autotune %.2f s of it)", tune_seconds_);
            s += line;
        }
    }
    // An A/B on a lent GPU must be able to tell which kernels ran.
    const std::vector<std::string> replaced = replaced_kernels();
    for (std::size_t i = 0; i < replaced.size() && !s.empty(); ++i)
        s += (i ? ", " : "; kernels from MOE_OPENCL_KERNEL_DIR: ") + replaced[i];
    return s;
}

Program Runtime::compile(const std::vector<std::string>& files, const std::string& options) const {
    arg_cache_.clear();
    std::vector<const char*> sources;
    std::vector<std::size_t> lengths;
    std::vector<std::string> from_disk = kernel_overrides(files);  // "" where none
    for (std::size_t i = 0; i < files.size(); ++i)
        for (const auto& s : kernel_sources())
            if (files[i] == s.file) {
                const bool disk = !from_disk[i].empty();
                sources.push_back(disk ? from_disk[i].c_str() : s.text);
                lengths.push_back(disk ? from_disk[i].size() : std::char_traits<char>::length(s.text));
            }
    cl_int rc = CL_SUCCESS;
    Program p;
    p.program_ = clCreateProgramWithSource(context_, static_cast<cl_uint>(sources.size()), sources.data(),
                                           lengths.data(), &rc);
    check(rc, "clCreateProgramWithSource");
    // OpenCL C 1.2, and no fast-math flags: the activation's exp must keep full accuracy.
    const std::string all = "-cl-std=CL1.2 " + options;
    rc = clBuildProgram(p.program_, 1, &device_.device, all.c_str(), nullptr, nullptr);
    if (rc != CL_SUCCESS) {
        std::size_t n = 0;
        clGetProgramBuildInfo(p.program_, device_.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
        std::string log(n, '\0');
        clGetProgramBuildInfo(p.program_, device_.device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
        std::string replaced;  // a build that fails on a replaced kernel says so
        for (std::size_t i = 0; i < files.size(); ++i)
            if (!from_disk[i].empty()) replaced += (replaced.empty() ? "" : ", ") + files[i];
        if (!replaced.empty()) replaced = " (" + replaced + " from MOE_OPENCL_KERNEL_DIR)";
        throw ClError("clBuildProgram", rc, "build log" + replaced + ":\n" + log);
    }
    dump_program_binary(p.program_, device_.device, files, all);
    cl_uint count = 0;
    check(clCreateKernelsInProgram(p.program_, 0, nullptr, &count), "clCreateKernelsInProgram");
    std::vector<cl_kernel> kernels(count);
    check(clCreateKernelsInProgram(p.program_, count, kernels.data(), nullptr), "clCreateKernelsInProgram");
    for (cl_kernel k : kernels) {
        std::size_t n = 0;
        clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &n);
        std::string name(n, '\0');
        clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, n, name.data(), nullptr);
        while (!name.empty() && name.back() == '\0') name.pop_back();
        p.kernels_[name] = k;
        p.limits_[name] = capped(name, kernel_work_group(k, device_.device));
    }
    return p;
}

cl_kernel Runtime::kernel(const std::string& name) const {
    if (cl_kernel k = main_.find(name)) return k;
    for (const auto& [types, g] : compressed_)
        if (cl_kernel k = g.program.find(name)) return k;
    if (cl_kernel k = f64_.find(name)) return k;
    throw ClError("kernel lookup (" + name + ", program not built)", CL_INVALID_KERNEL_NAME);
}

std::size_t Runtime::kernel_limit(const std::string& name) const {
    kernel(name);  // throws when no program has it
    for (const Program* p : {&main_, &f64_})
        if (p->find(name)) return std::min(p->limit(name), device_.max_work_group);
    for (const auto& [types, g] : compressed_)
        if (g.program.find(name)) return std::min(g.program.limit(name), device_.max_work_group);
    return 0;
}

Pinned Runtime::pinned(std::size_t bytes) const {
    arg_cache_.clear();
    Pinned p;
    cl_int rc = CL_SUCCESS;
    const std::size_t n = std::max<std::size_t>(bytes, 1);
    cl_mem m = clCreateBuffer(context_, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, n, nullptr, &rc);
    check(rc, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
    p.buf_ = Buffer(m, n);
    p.queue_ = queue_;
    p.ptr_ = clEnqueueMapBuffer(queue_, m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, n, 0, nullptr, nullptr, &rc);
    check(rc, "clEnqueueMapBuffer");
    return p;
}

void Runtime::write(const Buffer& b, std::size_t offset, std::size_t bytes, const void* host) const {
    if (bytes == 0) return;
    check(clEnqueueWriteBuffer(queue_, b.get(), CL_FALSE, offset, bytes, host, 0, nullptr, nullptr),
          "clEnqueueWriteBuffer");
}
Buffer Runtime::buffer(std::size_t bytes, const void* host, std::size_t pad) const {
    arg_cache_.clear();
    const std::size_t n = std::max<std::size_t>(bytes + pad, 1);
    cl_int rc = CL_SUCCESS;
    const bool copy = host && bytes && !pad;
    const cl_mem_flags flags = CL_MEM_READ_WRITE | (copy ? CL_MEM_COPY_HOST_PTR : 0);
    cl_mem m = clCreateBuffer(context_, flags, n, copy ? const_cast<void*>(host) : nullptr, &rc);
    check(rc, "clCreateBuffer");
    Buffer b(m, n);
    if (host && bytes && pad)
        check(clEnqueueWriteBuffer(queue_, m, CL_TRUE, 0, bytes, host, 0, nullptr, nullptr), "clEnqueueWriteBuffer");
    if (pad) {
        const float zero = 0.0f;  // bytes need not be a multiple of 4: zero from the last whole float
        const std::size_t at = bytes / sizeof(float) * sizeof(float), len = (n - at) / sizeof(float) * sizeof(float);
        if (len)
            check(clEnqueueFillBuffer(queue_, m, &zero, sizeof zero, at, len, 0, nullptr, nullptr), "clEnqueueFillBuffer");
        if (host && bytes && at < bytes)  // the fill overwrote the last partial float of the data
            check(clEnqueueWriteBuffer(queue_, m, CL_TRUE, at, bytes - at, static_cast<const char*>(host) + at, 0,
                                       nullptr, nullptr),
                  "clEnqueueWriteBuffer");
    }
    return b;
}

void Runtime::read(const Buffer& b, std::size_t bytes, void* host) const {
    if (bytes == 0) return;
    check(clEnqueueReadBuffer(queue_, b.get(), CL_TRUE, 0, bytes, host, 0, nullptr, nullptr), "clEnqueueReadBuffer");
}

void Runtime::launch(const char* name, cl_uint dims, const std::size_t* global, const std::size_t* local,
                     const char* label) const {
    for (cl_uint d = 0; d < dims; ++d)
        if (global[d] == 0) return;  // nothing to do (an empty range is an error in OpenCL)
    if (local) {
        std::size_t items = 1;
        for (cl_uint d = 0; d < dims; ++d) items *= local[d];
        if (const std::size_t most = kernel_limit(name); items > most)
            throw ClError(std::string("clEnqueueNDRangeKernel(") + name + ")", CL_INVALID_WORK_GROUP_SIZE,
                          "a work-group of " + std::to_string(items) + " work-items, more than the " +
                              std::to_string(most) + " this kernel takes on this device (CL_KERNEL_WORK_GROUP_SIZE)");
    }
    cl_event event = nullptr;
    const cl_int rc = clEnqueueNDRangeKernel(queue_, kernel(name), dims, nullptr, global, local, 0, nullptr, &event);
    if (rc != CL_SUCCESS) throw ClError(std::string("clEnqueueNDRangeKernel(") + name + ")", rc);
    events_.emplace_back(label ? label : name, event);
}

cl_event Runtime::read_async(const Buffer& b, std::size_t offset, std::size_t bytes, void* host) const {
    cl_event e = nullptr;
    check(clEnqueueReadBuffer(queue_, b.get(), CL_FALSE, offset, bytes, host, 0, nullptr, &e), "clEnqueueReadBuffer");
    return e;
}

void Runtime::flush() const { check(clFlush(queue_), "clFlush"); }

void Runtime::finish() const { check(clFinish(queue_), "clFinish"); }

std::map<std::string, double> Runtime::take_kernel_times() const {
    std::map<std::string, double> times;
    if (events_.empty()) return times;
    finish();
    for (auto& [name, e] : events_) {
        cl_ulong start = 0, end = 0;
        if (clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr) == CL_SUCCESS &&
            clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) == CL_SUCCESS && end >= start)
            times[name] += static_cast<double>(end - start) * 1e-9;
        clReleaseEvent(e);
    }
    events_.clear();
    return times;
}

void Runtime::set_raw(const char* name, cl_uint i, std::size_t size, const void* value) const {
    cl_kernel k = kernel(name);
    // The cached form: the size, then the bytes (none for a __local size).
    std::vector<unsigned char> v(sizeof size + (value ? size : 0));
    std::memcpy(v.data(), &size, sizeof size);
    if (value) std::memcpy(v.data() + sizeof size, value, size);
    auto& cached = arg_cache_[{k, i}];
    if (cached == v) return;
    cached = std::move(v);
    const cl_int rc = clSetKernelArg(k, i, size, value);
    if (rc != CL_SUCCESS)
        throw ClError(std::string("clSetKernelArg(") + name + ", argument " + std::to_string(i) + ")", rc);
}
void Runtime::set_arg(const char* name, cl_uint i, const Buffer& b) const {
    cl_mem m = b.get();
    set_raw(name, i, sizeof m, &m);
}
void Runtime::set_arg(const char* name, cl_uint i, std::uint32_t v) const { set_raw(name, i, sizeof v, &v); }
void Runtime::set_arg(const char* name, cl_uint i, std::int32_t v) const { set_raw(name, i, sizeof v, &v); }
void Runtime::set_arg(const char* name, cl_uint i, float v) const { set_raw(name, i, sizeof v, &v); }
void Runtime::set_arg(const char* name, cl_uint i, double v) const { set_raw(name, i, sizeof v, &v); }
void Runtime::set_arg(const char* name, cl_uint i, LocalBytes l) const { set_raw(name, i, l.bytes, nullptr); }

}  // namespace moe::backends::ocl
