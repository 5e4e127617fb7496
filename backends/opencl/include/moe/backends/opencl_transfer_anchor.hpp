#pragma once
// What moving a run's inputs and outputs between host and device costs on its own, for
// moe-bench --transfer-study: `bytes` between pageable host memory (as a caller's tensors are)
// and a device buffer, timed on the host from the first call to the transfer's completion. Three
// ways: the opencl backend's staged path (host threads copy chunks through pinned memory while
// the DMA engine moves the chunks already copied; docs/opencl-backend.md, "The host path"), one
// DMA command from pinned memory (the engine's own rate, no host copy), and one DMA command from
// the pageable memory itself (what a backend without staging gets).
#include <cstddef>
#include <memory>
#include <string>

namespace moe::backends {

class OpenclTransferAnchor {
public:
    OpenclTransferAnchor(const std::string& device, std::size_t bytes);  // throws std::runtime_error
    ~OpenclTransferAnchor();
    struct Seconds {
        double in = 0, out = 0;  // host to device, device to host
    };
    // threads x chunk_bytes as MOE_OPENCL_STAGING gives them (0, 0: the backend's own plan).
    Seconds staged(unsigned threads, std::size_t chunk_bytes);
    // New bytes through the staged path with that plan, in and out again: true when every byte
    // came back (for the tests; the timed calls do not compare).
    bool staged_round_trip(unsigned threads, std::size_t chunk_bytes);
    Seconds pinned();
    Seconds pageable();
    std::size_t bytes() const;
    std::string device() const;  // the device's name and driver version
    static std::string backend_plan();  // the plan the backend runs with, "8x1024"
    // Whether the backend stages hidden states of `bytes` (larger ones) or packs them into its one
    // upload of indices and routing weights (small ones); the output is always staged.
    static bool backend_stages_input(std::size_t bytes);

private:
    struct State;
    std::unique_ptr<State> s_;
};

}  // namespace moe::backends
