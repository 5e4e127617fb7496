#pragma once
// Groups and datasets: creating them with the format's chunking and filters, listing a group,
// reading a dataset's shape and its data. `where` names the object in messages
// ("dataset /inputs/weight_0").
#include <hdf5.h>

#include <optional>
#include <string>
#include <vector>

#include "hdf5/h5_handles.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::golden::h5 {

inline constexpr unsigned kDeflateLevel = 4;
inline constexpr std::size_t kMaxChunkBytes = std::size_t{1} << 20;  // ~1 MiB per chunk
// Larger datasets (model-sized weights, generated on demand) are stored uncompressed: deflate
// gains little on random floats and would dominate the time to write them.
inline constexpr std::size_t kMaxCompressedBytes = std::size_t{64} << 20;

// More members than this in /inputs, /outputs or /stages is damage, not a golden file.
inline constexpr std::size_t kMaxGroupMembers = 4096;

// Chunk shape of at most kMaxChunkBytes, never larger than the dataset: trailing dimensions are
// kept whole where possible (rows stay contiguous) and leading ones are cut first.
std::vector<hsize_t> chunk_dims(const Shape& shape, std::size_t elem_size);

// A group without timestamps. A group of more than 8 members (the inputs of a case with
// compressed weights) keeps its links compact, in its object header, as smaller groups do:
// HDF5's dense link storage (a fractal heap and a B-tree) is where libhdf5 1.10 crashes on
// damaged files instead of reporting them (found by golden_fuzz on such files).
H5Id create_group(hid_t parent, const std::string& name, const FileContext& ctx, const std::string& where,
                  std::size_t members = 0);

// Creates the dataset for `t` (its element type, its shape, the format's chunking and filters,
// no timestamps) without writing data; write_dataset_data writes it. Rank 0 is malformed.
H5Id create_dataset(hid_t group, const std::string& name, const Tensor& t, const FileContext& ctx,
                    const std::string& where);
void write_dataset_data(hid_t dset, const Tensor& t, const FileContext& ctx, const std::string& where);

// Opens member `name` of `parent` as a group: nullopt when absent; malformed when it is
// something else. Links are checked first (h5_links.hpp): nothing outside the file is opened.
std::optional<H5Id> open_group(hid_t parent, const std::string& name, const FileContext& ctx,
                               const std::string& where);

// Opens member `name` of `group` as a dataset: malformed when it is something else.
H5Id open_dataset(hid_t group, const std::string& name, const FileContext& ctx, const std::string& where);

// The names of a group's links, in name order (at most kMaxGroupMembers).
std::vector<std::string> member_names(hid_t group, const FileContext& ctx, const std::string& where);

// A dataset's shape: a simple dataspace of rank >= 1, else malformed.
Shape dataset_shape(hid_t dset, const FileContext& ctx, const std::string& where);

// Whether H5Dread writes every element of `dset` whatever its storage holds: HDF5 writes the fill
// value where a chunk is missing unless the fill time is NEVER (or no fill value is defined), and
// then leaves those bytes as they were. plan_group refuses missing chunks; this is for a chunk
// index that lies about them (golden files are untrusted), so that a buffer read into without
// zero-filling it first never shows memory the file did not fill.
bool read_writes_every_element(hid_t dset, const FileContext& ctx, const std::string& where);

// Reads all of the dataset's data into `t` (already of the dataset's shape and element type
// `dt`, its bytes not necessarily written: they are zeroed first where read_writes_every_element
// is false), bit for bit. A failed read is corrupt (checksum, decompression) or unreadable (a
// filter not available).
void read_dataset_data(hid_t dset, hid_t stored_type, Tensor& t, const FileContext& ctx, const std::string& where);

}  // namespace moe::golden::h5
