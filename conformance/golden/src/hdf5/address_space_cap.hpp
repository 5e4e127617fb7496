#pragma once
// A variable-length string's descriptor in the file carries its length (4 bytes), and HDF5 1.10
// allocates that much, twice, before it reads the string from its heap object: in a file without
// metadata checksums one changed byte asks for 8 GiB. Nothing before H5Aread can see that length,
// so the read runs with the process's address space capped: an absurd length then fails as an
// allocation (an HDF5 error, the file named) instead of taking the machine's memory.
#include <sys/resource.h>

#include <cstddef>

namespace moe::golden::h5 {

// Lowers the soft RLIMIT_AS to the address space in use plus `headroom` bytes for its lifetime,
// then restores it. Does nothing where the limit is already lower, where the size in use cannot be
// read, and under AddressSanitizer (whose reserved shadow memory makes address space meaningless
// as a budget, and which aborts on a failed allocation by default).
class AddressSpaceCap {
public:
    explicit AddressSpaceCap(std::size_t headroom);
    ~AddressSpaceCap();
    AddressSpaceCap(const AddressSpaceCap&) = delete;
    AddressSpaceCap& operator=(const AddressSpaceCap&) = delete;

private:
    rlimit saved_{};
    bool lowered_ = false;
};

}  // namespace moe::golden::h5
