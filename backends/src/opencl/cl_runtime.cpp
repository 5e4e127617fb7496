#include "cl_runtime.hpp"

#include <algorithm>
#include <vector>

#include "opencl_kernels.hpp"  // generated at configure time from kernels/*.cl

namespace moe::backends::ocl {

namespace {
constexpr const char* kKernelNames[] = {"moe_mask_gen", "moe_gather", "moe_gemm", "moe_swiglu", "moe_scatter_reduce"};
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
    const std::string options = "-cl-std=CL1.2" + (defines.empty() ? std::string() : " " + defines);
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
    // GEMM tile: the largest power of two up to 16 whose ts x ts work-group the device and this
    // kernel accept and whose two f32 tiles fit in local memory next to the kernel's own use.
    std::size_t kernel_wg = 0;
    cl_ulong kernel_local = 0;
    check(clGetKernelWorkGroupInfo(kernels_["moe_gemm"], device_.device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernel_wg,
                                   &kernel_wg, nullptr),
          "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)");
    check(clGetKernelWorkGroupInfo(kernels_["moe_gemm"], device_.device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof kernel_local,
                                   &kernel_local, nullptr),
          "clGetKernelWorkGroupInfo(CL_KERNEL_LOCAL_MEM_SIZE)");
    const std::size_t wg = std::min(kernel_wg, device_.max_work_group);
    for (std::uint32_t ts = 16; ts >= 1; ts /= 2) {
        const bool items_ok = ts <= device_.max_item_sizes[0] && ts <= device_.max_item_sizes[1];
        const cl_ulong local = 2ull * ts * ts * sizeof(float) + kernel_local;
        if (std::size_t(ts) * ts <= wg && items_ok && local <= device_.local_mem) {
            gemm_tile_ = ts;
            break;
        }
    }
}

cl_kernel Runtime::kernel(const std::string& name) const {
    auto it = kernels_.find(name);
    if (it == kernels_.end()) throw ClError("kernel lookup (" + name + ", program not built)", CL_INVALID_KERNEL_NAME);
    return it->second;
}

Buffer Runtime::buffer(std::size_t bytes, const void* host) const {
    const std::size_t n = bytes ? bytes : 1;
    cl_int rc = CL_SUCCESS;
    const cl_mem_flags flags = CL_MEM_READ_WRITE | (host && bytes ? CL_MEM_COPY_HOST_PTR : 0);
    cl_mem m = clCreateBuffer(context_, flags, n, host && bytes ? const_cast<void*>(host) : nullptr, &rc);
    check(rc, "clCreateBuffer");
    return Buffer(m, n);
}

void Runtime::read(const Buffer& b, std::size_t bytes, void* host) const {
    if (bytes == 0) return;
    check(clEnqueueReadBuffer(queue_, b.get(), CL_TRUE, 0, bytes, host, 0, nullptr, nullptr), "clEnqueueReadBuffer");
}

void Runtime::launch(const char* name, cl_uint dims, const std::size_t* global, const std::size_t* local) const {
    for (cl_uint d = 0; d < dims; ++d)
        if (global[d] == 0) return;  // nothing to do (an empty range is an error in OpenCL)
    cl_event event = nullptr;
    const cl_int rc = clEnqueueNDRangeKernel(queue_, kernel(name), dims, nullptr, global, local, 0, nullptr, &event);
    if (rc != CL_SUCCESS) throw ClError(std::string("clEnqueueNDRangeKernel(") + name + ")", rc);
    events_.emplace_back(name, event);
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
