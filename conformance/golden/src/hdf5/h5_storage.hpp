#pragma once
// How a dataset's data is stored, checked before a single element is read: the data must be in
// the file itself, all of it, within the file's size, behind filters the format allows.
#include <hdf5.h>

#include <cstdint>
#include <string>

#include "hdf5/h5_handles.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::golden::h5 {

// deflate can expand data by at most about 1032:1; a stored size claiming more is damaged.
inline constexpr std::uint64_t kMaxDeflateRatio = 1040;

// Checks dataset `dset` of `shape` (stored elements of `stored_elem_size` bytes, `memory_bytes`
// once read) in a file of `file_bytes` bytes:
//   refused:   a virtual dataset, external raw storage, a filter other than deflate, shuffle
//              and fletcher32;
//   malformed: data never written (chunks missing, contiguous storage not allocated), stored
//              beyond the end of the file, or fewer stored bytes than the shape can come from.
// Fills in everything of DatasetStorage but `path`. `largest_chunk_bytes` gets the size of one
// chunk in memory (0 when not chunked): HDF5 holds one while it decompresses it.
DatasetStorage check_dataset_storage(hid_t dset, const Shape& shape, std::size_t stored_elem_size,
                                     std::uint64_t memory_bytes, std::uint64_t file_bytes,
                                     std::uint64_t& largest_chunk_bytes, const FileContext& ctx,
                                     const std::string& where);

}  // namespace moe::golden::h5
