#include "cl_runtime.hpp"

#include <algorithm>
#include <vector>

#include "opencl_kernels.hpp"  // generated at configure time from kernels/*.cl

namespace moe::backends::ocl {

namespace {
constexpr const char* kKernelNames[] = {
    "moe_mask_gen",          "moe_gather",            "moe_swiglu",           "moe_scatter_reduce",
    "moe_gemm_f32_kn",       "moe_gemm_f16_kn",       "moe_gemm_bf16_kn",     "moe_gemm_small_f32_kn",
    "moe_gemm_small_f16_kn", "moe_gemm_small_bf16_kn", "moe_gemm_rows_f32_nk", "moe_gemm_rows_f32_kn",
    "moe_gemm_rows_f16_nk",  "moe_gemm_rows_f16_kn",  "moe_gemm_rows_bf16_nk", "moe_gemm_rows_bf16_kn",
    "moe_gemm_rows_f32_nk1", "moe_gemm_rows_f32_nk2", "moe_gemm_rows_f32_nk4", "moe_gemm_rows_f16_nk1",
    "moe_gemm_rows_f16_nk2", "moe_gemm_rows_f16_nk4", "moe_gemm_rows_bf16_nk1", "moe_gemm_rows_bf16_nk2",
    "moe_gemm_rows_bf16_nk4"};

std::uint32_t floor_pow2(std::uint32_t v) {
    std::uint32_t p = 1;
    while (p * 2 <= v) p *= 2;
    return p;
}
}  // namespace

std::size_t GemmConfig::pad_elems() const {
    // Over-reads: a k-step or a vector past the end of a row (A, NK weights), a column tile past
    // N (KN weights, bias), plus one vector.
    return std::max({tiled.tk, tiled_tn(), small.tk, small_tn(), rows.tk, rows_tn(true), rows_tn(false)}) + vw;
}

std::string GemmConfig::defines() const {
    const auto shape = [](const char* p, const GemmShape& s) {
        const std::string P = std::string(" -DMOE_") + p + "_";
        return P + "LX=" + std::to_string(s.lx) + P + "LY=" + std::to_string(s.ly) + P + "MWI=" + std::to_string(s.mwi) +
               P + "NV=" + std::to_string(s.nv) + P + "TK=" + std::to_string(s.tk);
    };
    return "-DMOE_VW=" + std::to_string(vw) + shape("GT", tiled) + shape("GS", small) + shape("GR", rows) +
           " -DMOE_GR_MR=" + std::to_string(rows_mr) + " -DMOE_GR_NC=" + std::to_string(rows_nc);
}

std::string GemmConfig::describe() const {
    return "float" + std::to_string(vw) + "; tiled " + std::to_string(tiled_tm()) + "x" + std::to_string(tiled_tn()) +
           " tiles, work-group " + std::to_string(tiled.lx) + "x" + std::to_string(tiled.ly) + ", " +
           std::to_string(tiled.mwi) + "x" + std::to_string(tiled.nv * vw) + " per work-item, k-step " +
           std::to_string(tiled.tk) + "; small " + std::to_string(small_tm()) + "x" +
           std::to_string(small_tn()) + " tiles, work-group " + std::to_string(small.lx) + "x" +
           std::to_string(small.ly) + "; rows " + std::to_string(rows_tm(true)) + " (KN) / " +
           std::to_string(rows_tm(false)) + " (NK) per tile";
}

GemmConfig choose_gemm_config(const DeviceInfo& d, std::size_t kernel_wg) {
    GemmConfig c;
    // float4 at least (a GPU reporting 1 still loads float4 well), at most float16.
    c.vw = d.float_vector_width >= 4 ? std::min<std::uint32_t>(16, floor_pow2(d.float_vector_width)) : 4;
    std::size_t wg = d.max_work_group ? d.max_work_group : 1;
    if (kernel_wg) wg = std::min(wg, kernel_wg);
    const std::size_t max_x = d.max_item_sizes[0] ? d.max_item_sizes[0] : 1;
    const std::size_t max_y = d.max_item_sizes[1] ? d.max_item_sizes[1] : 1;
    // Tiled: 4 rows x one vector per work-item, about 64 columns (lx vectors) by 64 rows (ly = 16).
    GemmShape& t = c.tiled;
    t.mwi = 4;
    t.nv = 1;
    t.tk = std::max<std::uint32_t>(16, c.vw);
    t.lx = std::max<std::uint32_t>(1, 64 / c.vw);
    t.ly = 16;
    while (t.lx > 1 && t.lx > max_x) t.lx /= 2;
    while (t.ly > 1 && (std::size_t(t.lx) * t.ly > wg || t.ly > max_y)) t.ly /= 2;
    while (t.lx > 1 && std::size_t(t.lx) * t.ly > wg) t.lx /= 2;
    const auto local_bytes = [&](const GemmShape& s) {
        return 2ull * (std::uint64_t(s.ly) * s.mwi * s.tk + std::uint64_t(s.tk) * s.lx * s.nv * c.vw) * sizeof(float);
    };
    while (t.ly > 1 && local_bytes(t) > d.local_mem) t.ly /= 2;
    while (t.lx > 1 && local_bytes(t) > d.local_mem) t.lx /= 2;
    // Small (experts with few rows, e.g. 32 of them): half the rows and twice the columns of a
    // tiled block, so the work-group and each work-item's block stay the same.
    GemmShape& s = c.small;
    s = t;
    if (s.ly > 1) {
        s.ly /= 2;
        if (std::size_t(s.lx) * 2 <= max_x) s.lx *= 2;
    }
    while (s.lx > 1 && local_bytes(s) > d.local_mem) s.lx /= 2;
    // Rows (decode): one row of work-items over the same columns; 4 rows per tile for KN, and for
    // NK 8 rows and 4 columns per work-item streamed without local memory.
    GemmShape& r = c.rows;
    r = t;
    r.ly = 1;
    r.lx = std::max<std::uint32_t>(1, std::min<std::uint32_t>(64 / c.vw, std::uint32_t(std::min(wg, max_x))));
    c.rows_mr = 8;
    c.rows_nc = 4;
    return c;
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
    for (auto& [name, k] : kernels_) clReleaseKernel(k);
    if (program_) clReleaseProgram(program_);
    if (queue_) clReleaseCommandQueue(queue_);
    if (context_) clReleaseContext(context_);
}

void Runtime::build(const std::string& defines) {
    if (program_) return;
    gemm_ = choose_gemm_config(device_);
    build_program(defines);
    // A kernel may accept smaller work-groups than the device (registers, local memory): the
    // GEMM kernels require theirs exactly (reqd_work_group_size), so rebuild smaller if needed.
    std::size_t kernel_wg = 0;
    check(clGetKernelWorkGroupInfo(kernels_["moe_gemm_f32_kn"], device_.device, CL_KERNEL_WORK_GROUP_SIZE,
                                   sizeof kernel_wg, &kernel_wg, nullptr),
          "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)");
    if (kernel_wg < std::size_t(gemm_.tiled.lx) * gemm_.tiled.ly ||
        kernel_wg < std::size_t(gemm_.small.lx) * gemm_.small.ly || kernel_wg < gemm_.rows.lx) {
        for (auto& [name, k] : kernels_) clReleaseKernel(k);
        kernels_.clear();
        clReleaseProgram(program_);
        program_ = nullptr;
        gemm_ = choose_gemm_config(device_, kernel_wg);
        build_program(defines);
    }
}

void Runtime::build_program(const std::string& defines) {
    std::vector<const char*> sources;
    std::vector<std::size_t> lengths;
    for (const auto& s : kernel_sources()) {
        sources.push_back(s.text);
        lengths.push_back(std::char_traits<char>::length(s.text));
    }
    cl_int rc = CL_SUCCESS;
    cl_program program = clCreateProgramWithSource(context_, static_cast<cl_uint>(sources.size()), sources.data(),
                                                   lengths.data(), &rc);
    check(rc, "clCreateProgramWithSource");
    // OpenCL C 1.2, and no fast-math flags: the activation's exp must keep full f32 accuracy.
    const std::string options = "-cl-std=CL1.2 " + gemm_.defines() + (defines.empty() ? std::string() : " " + defines);
    rc = clBuildProgram(program, 1, &device_.device, options.c_str(), nullptr, nullptr);
    if (rc != CL_SUCCESS) {
        std::size_t n = 0;
        clGetProgramBuildInfo(program, device_.device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
        std::string log(n, '\0');
        clGetProgramBuildInfo(program, device_.device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
        clReleaseProgram(program);
        throw ClError("clBuildProgram", rc, "build log:\n" + log);
    }
    program_ = program;
    for (const char* name : kKernelNames) {
        cl_kernel k = clCreateKernel(program_, name, &rc);
        check(rc, (std::string("clCreateKernel(") + name + ")").c_str());
        kernels_[name] = k;
    }
}

cl_kernel Runtime::kernel(const std::string& name) const {
    auto it = kernels_.find(name);
    if (it == kernels_.end()) throw ClError("kernel lookup (" + name + ", program not built)", CL_INVALID_KERNEL_NAME);
    return it->second;
}

Buffer Runtime::buffer(std::size_t bytes, const void* host, std::size_t pad) const {
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
    cl_event event = nullptr;
    const cl_int rc = clEnqueueNDRangeKernel(queue_, kernel(name), dims, nullptr, global, local, 0, nullptr, &event);
    if (rc != CL_SUCCESS) throw ClError(std::string("clEnqueueNDRangeKernel(") + name + ")", rc);
    events_.emplace_back(label ? label : name, event);
}

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
    const cl_int rc = clSetKernelArg(kernel(name), i, size, value);
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
void Runtime::set_arg(const char* name, cl_uint i, LocalBytes l) const { set_raw(name, i, l.bytes, nullptr); }

}  // namespace moe::backends::ocl
