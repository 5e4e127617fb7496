#include "hdf5/address_space_cap.hpp"

#include <unistd.h>

#include <cstdio>

#if defined(__SANITIZE_ADDRESS__)
#define MOE_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MOE_UNDER_ASAN 1
#endif
#endif

namespace moe::golden::h5 {

namespace {

// The process's virtual size in bytes (the first field of /proc/self/statm, in pages), or 0.
std::size_t address_space_in_use() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long long pages = 0;
    const bool ok = std::fscanf(f, "%llu", &pages) == 1;
    std::fclose(f);
    const long page = ::sysconf(_SC_PAGESIZE);
    return ok && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : 0;
}

}  // namespace

AddressSpaceCap::AddressSpaceCap(std::size_t headroom) {
#ifndef MOE_UNDER_ASAN
    if (::getrlimit(RLIMIT_AS, &saved_) != 0) return;
    const std::size_t in_use = address_space_in_use();
    if (in_use == 0) return;
    const rlim_t cap = static_cast<rlim_t>(in_use + headroom);
    if (saved_.rlim_cur != RLIM_INFINITY && saved_.rlim_cur <= cap) return;
    rlimit lowered = saved_;
    lowered.rlim_cur = cap;
    lowered_ = ::setrlimit(RLIMIT_AS, &lowered) == 0;
#else
    (void)headroom;
#endif
}

AddressSpaceCap::~AddressSpaceCap() {
    if (lowered_) ::setrlimit(RLIMIT_AS, &saved_);
}

}  // namespace moe::golden::h5
