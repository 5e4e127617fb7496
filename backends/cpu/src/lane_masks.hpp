#pragma once
// The mask of a loop's last, partial vector step: the first min(remaining, lanes) lanes of a
// vector whose AVX-512 mask type is Mask (__mmask16, __mmask32, __mmask64: one bit a lane).
#include <cstddef>

namespace moe::backends::cpu {

template <class Mask>
constexpr Mask first_lanes(std::size_t remaining) {
    constexpr std::size_t kLanes = 8 * sizeof(Mask);
    return remaining >= kLanes ? static_cast<Mask>(~Mask{0}) : static_cast<Mask>((1ull << remaining) - 1u);
}

}  // namespace moe::backends::cpu
