#pragma once
// Buffers that start on a 64-byte cache line. The kernels read activations and arranged rows with
// 64-byte vector loads; from a std::vector (16-byte aligned) most of those loads span two lines,
// and a split load costs the core two. The bf16 dot kernels' chunk reads five such vectors (the
// codes and four of activations): with the activations on a line boundary they decode a chunk in
// 8.7-8.8 cycles where they took 9.8-10.2 (u4), 7.4-7.5 against 8.6-8.9 (MXFP4), one thread, the
// codes in L2 (docs/compressed.md).
#include <cstddef>
#include <new>
#include <vector>

namespace moe::backends::cpu {

inline constexpr std::size_t kCacheLine = 64;

template <class T>
struct CacheLineAllocator {
    using value_type = T;
    CacheLineAllocator() = default;
    template <class U>
    CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}
    T* allocate(std::size_t n) {
        return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kCacheLine}));
    }
    void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{kCacheLine}); }
    template <class U>
    bool operator==(const CacheLineAllocator<U>&) const noexcept { return true; }
    template <class U>
    bool operator!=(const CacheLineAllocator<U>&) const noexcept { return false; }
};

template <class T>
using CacheLineVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace moe::backends::cpu
