#pragma once
// Opening a golden file for reading, creating one for writing, and its root group.
#include <cstdint>
#include <filesystem>

#include "hdf5/h5_handles.hpp"

namespace moe::golden::h5 {

struct OpenedFile {
    H5Id file;
    std::uint64_t bytes = 0;  // the file's size on disk
};

// Opens ctx.file read-only: unreadable when it does not exist, is a directory, is not HDF5 or
// cannot be opened; refused when it is not a regular file (a FIFO, a device, a socket: reading
// one could block forever). HDF5 filter plugins are never loaded. The file's global heap
// collections are checked before it is returned (h5_global_heap.hpp): every string attribute
// read from it, by any reader, is then safe from the damage that hung or crashed HDF5.
OpenedFile open_file_for_reading(const FileContext& ctx);

// Creates `path` (which must not exist) for writing with the newest format bounds (checksummed
// metadata) and no timestamps on the root group.
H5Id create_file(const std::filesystem::path& path, const FileContext& ctx);

H5Id open_root(const H5Id& file, const FileContext& ctx);

// The superblock version of an open file (2 or later: checksummed metadata).
unsigned superblock_version(const H5Id& file, const FileContext& ctx);

}  // namespace moe::golden::h5
