#include "moe/backends/opencl_anchors.hpp"

#include <clblast.h>
#include <clblast_half.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <vector>

#include "../cl_device.hpp"
#include "../cl_runtime.hpp"

namespace moe::backends {

namespace {

using ocl::Buffer;
using ocl::Runtime;

std::unique_ptr<Runtime> open_device(const std::string& spec) {
    std::string why;
    const auto d = ocl::select_device(ocl::enumerate_devices(), spec, why);
    if (!d) throw std::runtime_error("opencl anchors: " + why);
    return std::make_unique<Runtime>(*d);
}

// END - START of a finished event, in seconds; 0 when the driver gives none.
double event_seconds(cl_event e, cl_profiling_info from, cl_event until) {
    cl_ulong a = 0, b = 0;
    if (clGetEventProfilingInfo(e, from, sizeof a, &a, nullptr) != CL_SUCCESS ||
        clGetEventProfilingInfo(until, CL_PROFILING_COMMAND_END, sizeof b, &b, nullptr) != CL_SUCCESS || b <= a)
        return 0;
    return double(b - a) * 1e-9;
}

// A buffer of `bytes` filled with a repeating non-zero pattern (timing on zeros can flatter).
Buffer filled(const Runtime& rt, std::size_t bytes, const void* pattern, std::size_t size) {
    Buffer b = rt.buffer(bytes);
    if (bytes >= size)
        ocl::check(clEnqueueFillBuffer(rt.queue(), b.get(), pattern, size, 0, bytes / size * size, 0, nullptr, nullptr),
                   "clEnqueueFillBuffer");
    return b;
}

}  // namespace

struct OpenclGemmAnchor::State {
    std::unique_ptr<Runtime> rt;
    std::size_t M, N, K;
    DType math;  // f32, f16 (HGEMM) or f64
    Buffer a, b, c;

    clblast::StatusCode gemm(cl_event* e) {
        cl_command_queue q = rt->queue();
        using clblast::Layout;
        using clblast::Transpose;
        const auto lay = Layout::kRowMajor;
        const auto tn = Transpose::kNo, ty = Transpose::kYes;
        if (math == DType::f64)
            return clblast::Gemm<double>(lay, tn, ty, M, N, K, 1.0, a.get(), 0, K, b.get(), 0, K, 0.0, c.get(), 0, N, &q, e);
        if (math == DType::f16)
            return clblast::Gemm<half>(lay, tn, ty, M, N, K, FloatToHalf(1.0f), a.get(), 0, K, b.get(), 0, K,
                                       FloatToHalf(0.0f), c.get(), 0, N, &q, e);
        return clblast::Gemm<float>(lay, tn, ty, M, N, K, 1.0f, a.get(), 0, K, b.get(), 0, K, 0.0f, c.get(), 0, N, &q, e);
    }
};

OpenclGemmAnchor::OpenclGemmAnchor(const std::string& device, std::size_t M, std::size_t N, std::size_t K, DType type)
    : s_(std::make_unique<State>()) {
    s_->rt = open_device(device);
    s_->M = M;
    s_->N = N;
    s_->K = K;
    const bool fp16 = s_->rt->device().fp16;
    s_->math = type == DType::f64 ? DType::f64 : (type == DType::f16 || type == DType::bf16) && fp16 ? DType::f16 : DType::f32;
    const std::size_t es = dtype_size(s_->math);
    // Patterns of 0.5, -0.25, 0.125, 1 in the element type.
    const float pf[4] = {0.5f, -0.25f, 0.125f, 1.0f};
    const double pd[4] = {0.5, -0.25, 0.125, 1.0};
    const unsigned short ph[4] = {0x3800, 0xb400, 0x3000, 0x3c00};
    const void* pattern = s_->math == DType::f64 ? static_cast<const void*>(pd)
                          : s_->math == DType::f16 ? static_cast<const void*>(ph) : static_cast<const void*>(pf);
    s_->a = filled(*s_->rt, M * K * es, pattern, 4 * es);
    s_->b = filled(*s_->rt, N * K * es, pattern, 4 * es);
    s_->c = s_->rt->buffer(M * N * es);
    // Warm-up: CLBlast compiles its kernels for the device on first use.
    const auto st = s_->gemm(nullptr);
    if (st != clblast::StatusCode::kSuccess)
        throw std::runtime_error("opencl anchors: CLBlast " + routine() + " failed with status " + std::to_string(int(st)));
    s_->rt->finish();
}

OpenclGemmAnchor::~OpenclGemmAnchor() = default;

double OpenclGemmAnchor::seconds() {
    // Markers around the call span every kernel CLBlast launches for it (a large GEMM may pad or
    // transpose first); the GEMM's own event is the fallback when markers carry no timestamps.
    cl_event before = nullptr, last = nullptr, after = nullptr;
    const auto start = std::chrono::steady_clock::now();
    ocl::check(clEnqueueMarkerWithWaitList(s_->rt->queue(), 0, nullptr, &before), "clEnqueueMarkerWithWaitList");
    const auto st = s_->gemm(&last);
    ocl::check(clEnqueueMarkerWithWaitList(s_->rt->queue(), 0, nullptr, &after), "clEnqueueMarkerWithWaitList");
    s_->rt->finish();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (st != clblast::StatusCode::kSuccess)
        throw std::runtime_error("opencl anchors: CLBlast " + routine() + " failed with status " + std::to_string(int(st)));
    double t = event_seconds(before, CL_PROFILING_COMMAND_END, after);
    if (t <= 0 && last) t = event_seconds(last, CL_PROFILING_COMMAND_START, last);
    for (cl_event e : {before, last, after})
        if (e) clReleaseEvent(e);
    return t > 0 ? t : wall;
}

double OpenclGemmAnchor::flops() const { return 2.0 * double(s_->M) * double(s_->N) * double(s_->K); }

std::string OpenclGemmAnchor::routine() const {
    return s_->math == DType::f64 ? "DGEMM" : s_->math == DType::f16 ? "HGEMM" : "SGEMM";
}

struct OpenclCopyAnchor::State {
    std::unique_ptr<Runtime> rt;
    ocl::Program program;
    Buffer a, b;
    cl_uint n = 0;  // float4 vectors
    std::size_t local = 256;  // work-group: 256, or what the device and the kernel take if fewer
};

OpenclCopyAnchor::OpenclCopyAnchor(const std::string& device, std::size_t bytes) : s_(std::make_unique<State>()) {
    s_->rt = open_device(device);
    s_->n = cl_uint(bytes / 16);
    const float pattern[4] = {0.5f, -0.25f, 0.125f, 1.0f};
    s_->a = filled(*s_->rt, std::size_t(s_->n) * 16, pattern, sizeof pattern);
    s_->b = s_->rt->buffer(std::size_t(s_->n) * 16);
    s_->program = s_->rt->compile({"anchor_copy.cl"}, "");
    cl_kernel k = s_->program.find("moe_anchor_copy");
    const cl_mem a = s_->a.get(), b = s_->b.get();
    ocl::check(clSetKernelArg(k, 0, sizeof a, &a), "clSetKernelArg");
    ocl::check(clSetKernelArg(k, 1, sizeof b, &b), "clSetKernelArg");
    ocl::check(clSetKernelArg(k, 2, sizeof s_->n, &s_->n), "clSetKernelArg");
    // A fixed 256 failed on devices that take fewer work-items a group (moe-bench: internal error,
    // CL_INVALID_WORK_GROUP_SIZE).
    std::size_t kernel_wg = 0;
    ocl::check(clGetKernelWorkGroupInfo(k, s_->rt->device().device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernel_wg,
                                        &kernel_wg, nullptr),
               "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)");
    s_->local = std::max<std::size_t>(1, std::min({s_->local, kernel_wg, s_->rt->device().max_work_group,
                                                   s_->rt->device().max_item_sizes[0]}));
    seconds();  // warm-up
}

OpenclCopyAnchor::~OpenclCopyAnchor() = default;

double OpenclCopyAnchor::seconds() {
    const std::size_t local = s_->local, global = (std::size_t(s_->n) + local - 1) / local * local;
    cl_event e = nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    ocl::check(clEnqueueNDRangeKernel(s_->rt->queue(), s_->program.find("moe_anchor_copy"), 1, nullptr, &global, &local,
                                      0, nullptr, &e),
               "clEnqueueNDRangeKernel(moe_anchor_copy)");
    ocl::check(clWaitForEvents(1, &e), "clWaitForEvents");
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double t = event_seconds(e, CL_PROFILING_COMMAND_START, e);
    clReleaseEvent(e);
    return t > 0 ? t : wall;  // a driver without profiling timestamps: the host's view, never 0
}

double OpenclCopyAnchor::bytes() const { return 2.0 * double(s_->n) * 16.0; }

}  // namespace moe::backends
