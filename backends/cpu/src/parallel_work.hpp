#pragma once
// When a loop is worth an OpenMP team.
#include <cstddef>

namespace moe::backends::cpu {

// Multiply-adds (or weights decoded) under which a loop runs on the calling thread: about 0.1 ms
// of work on one core. A parallel region costs more than a smaller loop, and far more when other
// processes hold the cores: libgomp's threads spin at the region's barrier while a descheduled
// team member finishes its share, a scheduler slice per region. Two selftests side by side on 2
// cores (ctest -j2) took 11 minutes each; with this bound here and in the reference
// (reference::kParallelMacs), 14-15 s, against 10-13 s with OMP_WAIT_POLICY=passive.
constexpr std::size_t kMinParallelWork = std::size_t(1) << 18;

}  // namespace moe::backends::cpu
