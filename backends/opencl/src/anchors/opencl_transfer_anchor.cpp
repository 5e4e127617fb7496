#include "moe/backends/opencl_transfer_anchor.hpp"

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "../cl_device.hpp"
#include "../cl_runtime.hpp"
#include "../host_transfer.hpp"
#include "../opencl_pipeline.hpp"

namespace moe::backends {

struct OpenclTransferAnchor::State {
    std::unique_ptr<ocl::Runtime> rt;
    ocl::Buffer device;
    ocl::Pinned staging;
    std::vector<unsigned char> host_in, host_out;  // pageable, every page touched
    std::size_t bytes = 0;
    unsigned round = 0;  // staged_round_trip's pattern changes every call

    // One write of `from` to the device and one read back into `to`, each a single DMA command.
    Seconds one_dma(const unsigned char* from, unsigned char* to) const {
        Seconds t;
        t.in = timed([&] { rt->write(device, 0, bytes, from); });
        t.out = timed([&] { rt->read(device, bytes, to); });
        return t;
    }

    template <class F>
    double timed(const F& f) const {
        const auto t0 = std::chrono::steady_clock::now();
        f();
        rt->finish();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
};

OpenclTransferAnchor::OpenclTransferAnchor(const std::string& device, std::size_t bytes)
    : s_(std::make_unique<State>()) {
    std::string why;
    const auto d = ocl::select_device(ocl::enumerate_devices(), device, why);
    if (!d) throw std::runtime_error("opencl transfer anchor: " + why);
    s_->rt = std::make_unique<ocl::Runtime>(*d);
    s_->bytes = std::max<std::size_t>(bytes, 1);
    s_->device = s_->rt->buffer(s_->bytes);
    s_->staging = s_->rt->pinned(s_->bytes);
    s_->host_in.resize(s_->bytes);
    s_->host_out.resize(s_->bytes);
    for (std::size_t i = 0; i < s_->bytes; ++i) s_->host_in[i] = static_cast<unsigned char>(i * 131 + 7);
    std::memset(s_->host_out.data(), 0, s_->bytes);
    std::memset(s_->staging.data(), 0, s_->bytes);
    staged(0, 0);  // warm-up: the helper threads started, the driver's first-use costs paid
    if (std::memcmp(s_->host_in.data(), s_->host_out.data(), s_->bytes) != 0)
        throw std::runtime_error("opencl transfer anchor: the staged path read back other bytes than it wrote");
    pinned();
    pageable();
}

OpenclTransferAnchor::~OpenclTransferAnchor() = default;

OpenclTransferAnchor::Seconds OpenclTransferAnchor::staged(unsigned threads, std::size_t chunk_bytes) {
    const ocl::StagingPlan plan = threads ? ocl::StagingPlan{threads, chunk_bytes} : ocl::staging_plan();
    State& s = *s_;
    Seconds t;
    t.in = s.timed([&] { ocl::upload(*s.rt, s.device, 0, s.host_in.data(), s.bytes, s.staging.data(), plan); });
    t.out = s.timed([&] { ocl::download(*s.rt, s.device, s.bytes, s.host_out.data(), s.staging.data(), plan); });
    return t;
}

bool OpenclTransferAnchor::staged_round_trip(unsigned threads, std::size_t chunk_bytes) {
    State& s = *s_;
    ++s.round;
    for (std::size_t i = 0; i < s.bytes; ++i) s.host_in[i] = static_cast<unsigned char>(i * 131 + 7 * s.round);
    std::memset(s.host_out.data(), 0xA5, s.bytes);
    const ocl::StagingPlan plan = threads ? ocl::StagingPlan{threads, chunk_bytes} : ocl::staging_plan();
    ocl::upload(*s.rt, s.device, 0, s.host_in.data(), s.bytes, s.staging.data(), plan);
    // The device holds the bytes (read on its own), and the download reads them from the device,
    // not from what the upload left in the staging memory.
    std::vector<unsigned char> on_device(s.bytes);
    s.rt->read(s.device, s.bytes, on_device.data());
    std::memset(s.staging.data(), 0x5A, s.bytes);
    ocl::download(*s.rt, s.device, s.bytes, s.host_out.data(), s.staging.data(), plan);
    return std::memcmp(s.host_in.data(), on_device.data(), s.bytes) == 0 &&
           std::memcmp(s.host_in.data(), s.host_out.data(), s.bytes) == 0;
}

OpenclTransferAnchor::Seconds OpenclTransferAnchor::pinned() {
    return s_->one_dma(s_->staging.data(), s_->staging.data());
}

OpenclTransferAnchor::Seconds OpenclTransferAnchor::pageable() {
    return s_->one_dma(s_->host_in.data(), s_->host_out.data());
}

std::size_t OpenclTransferAnchor::bytes() const { return s_->bytes; }

std::string OpenclTransferAnchor::device() const {
    return s_->rt->device().name + " (driver " + s_->rt->device().driver_version + ")";
}

bool OpenclTransferAnchor::backend_stages_input(std::size_t bytes) { return bytes > ocl::kPackedHiddenBytes; }

std::string OpenclTransferAnchor::backend_plan() {
    const ocl::StagingPlan p = ocl::staging_plan();
    return std::to_string(p.threads) + "x" + std::to_string(p.chunk >> 10);
}

}  // namespace moe::backends
