#pragma once
// moe-bench --transfer-study: what moving a layer's hidden states in and its output back costs on
// an OpenCL device's host, apart from the layer: the opencl backend's staged path with its own
// plan and with other thread counts and chunk sizes (MOE_OPENCL_STAGING), against one DMA command
// from pinned memory and one from pageable memory. moe-bench's rows report wall and device time
// of the whole layer; the gap between them is mostly these two transfers at large T, and this
// table says how close the staged path comes to the DMA engine's own rate.
#include <cstddef>
#include <string>
#include <vector>

namespace moe::bench {

struct TransferSize {
    std::string label;  // "gpt-oss-20b T=512 f32"
    std::size_t bytes;
};

// Throws InputError when the device cannot be opened or MOE_OPENCL_STAGING is malformed.
void transfer_study(const std::string& device, const std::vector<TransferSize>& sizes, int reps);

}  // namespace moe::bench
