#pragma once
// One device's context, queue and built program, plus the small helpers the pipeline needs:
// owned buffers, typed kernel arguments and launches that report failures by name.
#include <cstdint>
#include <cstddef>
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

// moe_gemm's sizes, compiled into the program (-D flags, kernels/gemm.cl) and chosen from the
// device's limits by choose_gemm_config. A work-group of lx x ly work-items computes a tm x tn
// tile, each work-item mwi rows by nv vectors of vw columns, in k-steps of tk.
struct GemmShape {
    std::uint32_t lx = 1, ly = 1, mwi = 1, nv = 1, tk = 16;
};
struct GemmConfig {
    std::uint32_t vw = 4;   // floats per vector (float4, float8, float16)
    GemmShape tiled;        // moe_gemm_*: blocks of rows
    GemmShape small;        // moe_gemm_small_*: blocks of fewer rows (about half), wider
    GemmShape rows;         // moe_gemm_rows_*_kn: a few rows (ly = 1)
    std::uint32_t rows_mr = 8, rows_nc = 4;  // moe_gemm_rows_*_nk: rows per tile, columns per work-item
    std::uint32_t tiled_tm() const { return tiled.ly * tiled.mwi; }
    std::uint32_t tiled_tn() const { return tiled.lx * tiled.nv * vw; }
    std::uint32_t small_tm() const { return small.ly * small.mwi; }
    std::uint32_t small_tn() const { return small.lx * small.nv * vw; }
    std::uint32_t rows_tm(bool kn) const { return kn ? rows.ly * rows.mwi : rows_mr; }
    std::uint32_t rows_tn(bool kn) const { return kn ? rows.lx * rows.nv * vw : rows.lx * rows_nc; }
    // Elements the kernels may read past the end of an A, weight or bias buffer (never used).
    std::size_t pad_elems() const;
    std::string defines() const;  // the -D flags
    std::string describe() const;
};
// Sizes for this device: vector width from its preferred float vector width, about 64 x 64
// output tiles, shrunk until the work-group fits max_work_group (and the kernel's own limit,
// kernel_wg, once known) and both double-buffered tiles fit its local memory.
GemmConfig choose_gemm_config(const DeviceInfo& d, std::size_t kernel_wg = 0);

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
    // moe_gemm's compiled-in sizes (valid after build()).
    const GemmConfig& gemm() const { return gemm_; }

    // A device buffer of max(bytes + pad, 1) bytes (an empty tensor still has a valid cl_mem),
    // its first `bytes` initialised from host when given and the pad zeroed.
    Buffer buffer(std::size_t bytes, const void* host = nullptr, std::size_t pad = 0) const;
    void read(const Buffer& b, std::size_t bytes, void* host) const;
    // Enqueues `kernel` over a 1-D or 2-D range; local may be null (the runtime picks). Its time
    // is reported under `label` (default: the kernel's name).
    void launch(const char* name, cl_uint dims, const std::size_t* global, const std::size_t* local = nullptr,
                const char* label = nullptr) const;
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
    void build_program(const std::string& defines);

    DeviceInfo device_;
    cl_context context_ = nullptr;
    cl_command_queue queue_ = nullptr;
    cl_program program_ = nullptr;
    std::map<std::string, cl_kernel> kernels_;
    GemmConfig gemm_;
    mutable std::vector<std::pair<std::string, cl_event>> events_;  // launches not yet summed
};

}  // namespace moe::backends::ocl
