#pragma once
// HDF5 keeps variable-length strings (our attributes) in global heap collections, the one kind
// of metadata that carries no checksum in any format version, and HDF5 1.10 trusts their object
// sizes: a damaged collection makes it copy past its buffers (a crash) or loop forever (a hang)
// when a string attribute is read. So before any attribute is read, every collection in the file
// is walked the way HDF5 will walk it, and one that HDF5 could not walk safely is refused.
#include <cstdint>
#include <string>

#include "hdf5/h5_handles.hpp"

namespace moe::golden::h5 {

// A golden file's strings need a few KiB; a collection claiming more is damage.
inline constexpr std::uint64_t kMaxGlobalHeapBytes = std::uint64_t{16} << 20;

// Finds every global heap collection of ctx.file (signature "GCOL", version 1) and checks it:
// at least 4096 bytes, within the file and kMaxGlobalHeapBytes, and its objects tile it exactly
// (each within the collection, none of size zero). `length_size`: the file's size of lengths.
// Corrupt (naming the byte offset) when one does not.
void check_global_heaps(const FileContext& ctx, std::uint64_t file_bytes, unsigned length_size);

// The unsigned integer stored little-endian in p[0, bytes) (at most 8 bytes are read): how HDF5
// stores sizes, addresses and indices.
std::uint64_t little_endian(const unsigned char* p, unsigned bytes);

// Where a variable-length string's descriptor says its bytes are: object `index` of the collection
// at absolute byte `collection`, `bytes` long.
struct HeapObjectRef {
    std::uint64_t collection = 0;
    unsigned index = 0;
    std::uint64_t bytes = 0;
    unsigned length_size = 8;  // the file's size of lengths
};

// HDF5 1.10 follows a string descriptor without checking it: an index the collection does not
// hold is read through a wild pointer (a crash), a length other than the object's copies past a
// buffer. Corrupt, naming `where`, unless the collection exists (checked as above) and holds
// object `index` of exactly `bytes` bytes.
void check_heap_object(const FileContext& ctx, const HeapObjectRef& ref, const std::string& where);

// The file's "size of lengths" (8 unless a writer chose otherwise).
unsigned length_size(const H5Id& file, const FileContext& ctx);

}  // namespace moe::golden::h5
