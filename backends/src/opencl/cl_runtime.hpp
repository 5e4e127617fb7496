#pragma once
// One device's context, queue and built program, plus the small helpers the pipeline needs:
// owned buffers, typed kernel arguments and launches that report failures by name.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cl_device.hpp"

namespace moe::backends::ocl {

class Buffer {
public:
    Buffer() = default;
    Buffer(cl_mem m, std::size_t bytes) : mem_(m), bytes_(bytes) {}
    Buffer(Buffer&& o) noexcept : mem_(std::exchange(o.mem_, nullptr)), bytes_(o.bytes_) {}
    Buffer& operator=(Buffer&& o) noexcept {
        std::swap(mem_, o.mem_);
        std::swap(bytes_, o.bytes_);
        return *this;
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() {
        if (mem_) clReleaseMemObject(mem_);
    }
    cl_mem get() const { return mem_; }
    std::size_t bytes() const { return bytes_; }

private:
    cl_mem mem_ = nullptr;
    std::size_t bytes_ = 0;
};

// A __local kernel argument of this many bytes.
struct LocalBytes {
    std::size_t bytes;
};

class Runtime {
public:
    explicit Runtime(const DeviceInfo& device);  // context and queue; throws ClError
    ~Runtime();
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    const DeviceInfo& device() const { return device_; }
    // Builds the embedded kernel sources once; a build failure throws with the build log.
    // `defines` are extra build options ("-DMOE_MUT_TILE_EDGE" for the selftest mutants).
    void build(const std::string& defines = "");
    cl_kernel kernel(const std::string& name) const;
    // Side of the square GEMM tile (work-group ts x ts), from the device and kernel limits.
    std::uint32_t gemm_tile() const { return gemm_tile_; }

    // A device buffer of max(bytes, 1) bytes (an empty tensor still has a valid cl_mem),
    // initialised from host when given.
    Buffer buffer(std::size_t bytes, const void* host = nullptr) const;
    void read(const Buffer& b, std::size_t bytes, void* host) const;
    // Enqueues `kernel` over a 1-D or 2-D range; local may be null (the runtime picks).
    void launch(const char* name, cl_uint dims, const std::size_t* global, const std::size_t* local = nullptr) const;
    void finish() const;
    // Every launch since the last call, from the queue's profiling events (END - START), summed
    // per kernel name in seconds; waits for the queue and releases the events.
    std::map<std::string, double> take_kernel_times() const;

    template <class... Args>
    void args(const char* name, const Args&... a) const {
        cl_uint i = 0;
        (set_arg(name, i++, a), ...);
    }

private:
    void set_arg(const char* name, cl_uint i, const Buffer& b) const;
    void set_arg(const char* name, cl_uint i, std::uint32_t v) const;
    void set_arg(const char* name, cl_uint i, std::int32_t v) const;
    void set_arg(const char* name, cl_uint i, float v) const;
    void set_arg(const char* name, cl_uint i, LocalBytes l) const;
    void set_raw(const char* name, cl_uint i, std::size_t size, const void* value) const;

    DeviceInfo device_;
    cl_context context_ = nullptr;
    cl_command_queue queue_ = nullptr;
    cl_program program_ = nullptr;
    std::map<std::string, cl_kernel> kernels_;
    std::uint32_t gemm_tile_ = 1;
    mutable std::vector<std::pair<std::string, cl_event>> events_;  // launches not yet summed
};

}  // namespace moe::backends::ocl
