#pragma once
// One device's context, queue and built programs, plus the small helpers the pipeline needs:
// owned buffers, pinned host memory, typed kernel arguments and launches that report failures
// by name.
#include <cstdint>
#include <cstddef>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cl_device.hpp"
#include "gemm_config.hpp"

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

// Host memory the device copies from by DMA without an intermediate copy (pinned, on a GPU): a
// CL_MEM_ALLOC_HOST_PTR buffer mapped once for the life of the object.
class Pinned {
public:
    Pinned() = default;
    Pinned(Pinned&& o) noexcept { *this = std::move(o); }
    Pinned& operator=(Pinned&& o) noexcept {
        std::swap(queue_, o.queue_);
        std::swap(buf_, o.buf_);
        std::swap(ptr_, o.ptr_);
        return *this;
    }
    Pinned(const Pinned&) = delete;
    Pinned& operator=(const Pinned&) = delete;
    ~Pinned();
    unsigned char* data() const { return static_cast<unsigned char*>(ptr_); }
    std::size_t bytes() const { return buf_.bytes(); }

private:
    friend class Runtime;
    cl_command_queue queue_ = nullptr;
    Buffer buf_;
    void* ptr_ = nullptr;
};

// A __local kernel argument of this many bytes.
struct LocalBytes {
    std::size_t bytes;
};

// A built program and its kernels by name.
class Program {
public:
    Program() = default;
    Program(Program&& o) noexcept { *this = std::move(o); }
    Program& operator=(Program&& o) noexcept {
        std::swap(program_, o.program_);
        std::swap(kernels_, o.kernels_);
        std::swap(limits_, o.limits_);
        return *this;
    }
    Program(const Program&) = delete;
    Program& operator=(const Program&) = delete;
    ~Program();
    bool built() const { return program_ != nullptr; }
    cl_kernel find(const std::string& name) const;  // nullptr when absent
    // The most work-items a group of this kernel may have (CL_KERNEL_WORK_GROUP_SIZE, which a
    // driver may set below the device's limit: registers, local memory); 0 when absent.
    std::size_t limit(const std::string& name) const;

private:
    friend class Runtime;
    cl_program program_ = nullptr;
    std::map<std::string, cl_kernel> kernels_;
    std::map<std::string, std::size_t> limits_;
};

// What one compressed-weight GEMM program is compiled for (kernels/gemm_compressed.cl's MOE_CW,
// MOE_CS, MOE_CZ): the element type codes (element_codes.hpp's elem_type) of a compressed
// weight, its scale and its zero point (-1: none).
struct CompressedTypes {
    std::int32_t weight = 0, scale = 0, zero = -1;
    bool operator<(const CompressedTypes& o) const {
        return std::tie(weight, scale, zero) < std::tie(o.weight, o.scale, o.zero);
    }
    bool operator==(const CompressedTypes& o) const {
        return std::tie(weight, scale, zero) == std::tie(o.weight, o.scale, o.zero);
    }
    // The suffix of the program's kernel names (MOE_CV): "_u4_f16_u4", "_f4e2m1_f8e8m0".
    std::string suffix() const;
    // "u4, f16 scales, u4 zero points" (the build report).
    std::string describe() const;
};

// A compressed-weight GEMM program and what the device made of it.
struct CompressedGemms {
    Program program;
    std::string suffix;  // CompressedTypes::suffix(): kernel "moe_gemm_compressed_rows1" is rows1 + suffix
    // The GPU bodies: the work-group of moe_gemm_compressed_rows* (128, else 64 or 32 where the
    // device or the compiled kernels take fewer; 0: none fits, their tiles go to
    // moe_gemm_compressed), and whether moe_gemm_compressed_tiled takes the tiled shape's
    // work-group. Unused on the CPU bodies.
    std::uint32_t rows_wg = 128;
    bool tiled = true;
    std::string kernel(const std::string& base) const { return base + suffix; }
};

class Runtime {
public:
    explicit Runtime(const DeviceInfo& device);  // context and queue; throws ClError
    ~Runtime();
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    const DeviceInfo& device() const { return device_; }
    // Builds the embedded f32 program once: the GEMM sizes from gemm_config_for (cl_tune.hpp: the
    // autotune's choice on a GPU, cached per device and driver), rebuilt smaller if a GEMM kernel
    // accepts fewer work-items than its tile needs. A build failure throws with the build log.
    // `defines` are extra build options ("-DMOE_MUT_TILE_EDGE" for the selftest mutants).
    void build(const std::string& defines = "");
    // The compressed-weight GEMM kernels (kernels/gemm_compressed.cl) for weights of types `t`,
    // with the f32 program's options and the types as constants (-DMOE_CW, -DMOE_CS, -DMOE_CZ):
    // one program per CompressedTypes, built the first time a problem needs it (prepare(), or
    // the run that needs it) and kept for the runtime's life, so a run never builds. Apart so
    // that plain problems never pay for compiling them (on NVIDIA's driver the compressed
    // kernels are most of the build time). Builds the f32 program first if needed.
    const CompressedGemms& build_compressed(const CompressedTypes& t);
    // The program build_compressed(t) built; throws std::logic_error when it has not.
    const CompressedGemms& compressed(const CompressedTypes& t) const;
    // The f64 program (kernels/f64.cl), once, on a device with cl_khr_fp64; false without it.
    bool build_f64();
    // What the builds so far took: "f32 program 1.90 s (autotune 0.80 s of it), compressed-weight
    // GEMMs [u4, f16 scales, u4 zero points] 3.10 s";
    // empty before the first.
    std::string build_report() const;
    bool has_f64() const { return f64_.built(); }
    bool built() const { return main_.built(); }
    // Builds kernels/`files` (in that order) with `options` (-cl-std=CL1.2 is added); every
    // kernel of it is created. For the autotune's trial programs.
    Program compile(const std::vector<std::string>& files, const std::string& options) const;
    cl_kernel kernel(const std::string& name) const;
    // Program::limit of a built kernel, and no more than the device takes.
    std::size_t kernel_limit(const std::string& name) const;
    // moe_gemm's compiled-in sizes (valid after build()).
    const GemmConfig& gemm() const { return gemm_; }

    // A device buffer of max(bytes + pad, 1) bytes (an empty tensor still has a valid cl_mem),
    // its first `bytes` initialised from host when given and the pad zeroed.
    Buffer buffer(std::size_t bytes, const void* host = nullptr, std::size_t pad = 0) const;
    Pinned pinned(std::size_t bytes) const;
    // Copies to the device; not blocking: `host` must stay valid until the queue has run it.
    void write(const Buffer& b, std::size_t offset, std::size_t bytes, const void* host) const;
    void read(const Buffer& b, std::size_t bytes, void* host) const;  // blocking
    // Not blocking: the returned event (the caller releases it) completes when `host` is written.
    cl_event read_async(const Buffer& b, std::size_t offset, std::size_t bytes, void* host) const;
    void flush() const;  // submits what is queued (a driver may hold commands back until then)
    // Enqueues `kernel` over a 1-D or 2-D range; local may be null (the runtime picks). Its time
    // is reported under `label` (default: the kernel's name). A work-group larger than the
    // kernel's limit throws, naming both (a driver says only CL_INVALID_WORK_GROUP_SIZE).
    void launch(const char* name, cl_uint dims, const std::size_t* global, const std::size_t* local = nullptr,
                const char* label = nullptr) const;
    void finish() const;
    // Every launch since the last call, from the queue's profiling events (END - START), summed
    // per kernel name in seconds; waits for the queue and releases the events.
    std::map<std::string, double> take_kernel_times() const;
    cl_command_queue queue() const { return queue_; }

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
    void set_arg(const char* name, cl_uint i, double v) const;
    void set_arg(const char* name, cl_uint i, LocalBytes l) const;
    void set_raw(const char* name, cl_uint i, std::size_t size, const void* value) const;

    DeviceInfo device_;
    cl_context context_ = nullptr;
    cl_command_queue queue_ = nullptr;
    Program main_, f64_;
    std::map<CompressedTypes, CompressedGemms> compressed_;  // build_compressed's programs
    std::string options_;  // the f32 program's build options, for the compressed one
    std::vector<std::pair<std::string, double>> build_seconds_;  // for build_report()
    double tune_seconds_ = 0;
    GemmConfig gemm_;
    mutable std::vector<std::pair<std::string, cl_event>> events_;  // launches not yet summed
    // The last value set for each kernel argument: a run that repeats the previous one's
    // arguments sets none (each clSetKernelArg costs host time on some drivers). Cleared whenever
    // a buffer or program is created, so a recycled cl_mem or cl_kernel handle is never trusted.
    mutable std::map<std::pair<cl_kernel, cl_uint>, std::vector<unsigned char>> arg_cache_;
};

}  // namespace moe::backends::ocl
