#pragma once
// Reading and writing golden files: one MOE case per HDF5 file. spec/golden-format.md is the
// contract; this is its only implementation in the project.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "moe/spec/problem.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::golden {

inline constexpr const char* kFormatName = "moe-golden";
// The newest format version: 2 adds compressed weights. A file without them is written as
// version 1 (byte-identical to what version 1 wrote); the reader takes both.
inline constexpr std::int64_t kFormatVersion = 2;

struct GoldenCase {
    Problem problem;                        // problem.name is the root attribute `case`
    std::optional<std::uint64_t> seed;      // root attribute `seed`, where generated
    std::string generator;                  // root attribute `generator`, "" when absent
    std::string tier;                       // root attribute `tier` (quick | ci | full), "" when absent
    std::string description;                // root attribute `description`, "" when absent
    bool exact = false;                     // root attribute `exact` (u8): exact by construction
    std::map<std::string, Tensor> outputs;  // /outputs/<name>, f64 (`output` is the result)
    std::map<std::string, Tensor> stages;   // /stages/<name>, f64 [T, K, features]
};

// Text taken from a file (case names, dataset names, paths) made safe to print: control
// characters (newlines, terminal escapes, C1 controls), bidirectional format characters and
// invalid UTF-8 become \xNN per byte, a backslash \\ (two texts never print the same); as
// moe::printable (moe/spec/printable.hpp). FileError messages are made of it.
std::string printable(std::string_view text);

// The shortest of v's 15- to 17-digit decimals that reads back as exactly v ("1.702", not
// "1.7019999999999999"): how an attribute's value is shown (messages, reports).
std::string shortest_decimal(double v);

// Why a file could not be used. The message names the file and the dataset or attribute.
class FileError : public std::runtime_error {
public:
    enum class Kind {
        unreadable,  // not an HDF5 file, or cannot be opened
        corrupt,     // a checksum (Fletcher32) does not match: the data changed after writing
        malformed,   // a required attribute or dataset is missing, or has the wrong type/shape
        refused,     // uses what a golden file may not: data outside the file (external storage,
                     // external links, virtual datasets), a filter other than deflate, shuffle and
                     // fletcher32, a non-regular file; or needs more memory than allowed
    };
    FileError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
    Kind kind() const { return kind_; }

private:
    Kind kind_;
};

// How one dataset is stored (what `moe-golden inspect` reports).
struct DatasetStorage {
    std::string path;             // "/inputs/weight_0"
    std::string layout;           // "chunked", "contiguous" or "compact"
    bool shuffle = false, deflate = false, fletcher32 = false;
    std::uint64_t stored_bytes = 0;  // bytes the data occupies in the file
    std::uint64_t memory_bytes = 0;  // bytes it occupies once read
};

struct FileStorage {
    unsigned superblock_version = 0;
    // Superblock version 2 or later: the file's metadata (superblock, object headers, chunk
    // indexes) carries checksums that HDF5 verifies on every read. Written with the newest format
    // bounds, golden files always have them; files written by h5py with its defaults do not.
    bool metadata_checksums = false;
    std::uint64_t file_bytes = 0;
    std::vector<DatasetStorage> datasets;  // in read order
};

// The default memory budget of one read: the smaller of 8 GiB and three quarters of the
// machine's physical memory.
std::uint64_t default_max_memory();

// A byte count as the memory-budget messages print it: "N bytes" below 1 KiB, else one decimal in
// KiB, MiB or GiB. A double, because estimates of hostile shapes pass 2^64.
std::string readable_bytes(double bytes);

struct ReadOptions {
    bool require_output = true;       // a file without /outputs/output is malformed
    std::uint64_t max_memory = 0;     // bytes the datasets may need once read; 0 = default_max_memory()
    FileStorage* storage = nullptr;   // filled in when given
};

// Reads root attributes, /inputs, and (when present) /outputs and /stages. Resolved-parameter
// attributes, when present, must agree with resolve(attributes). Throws FileError; problem rules
// are not checked here (call validate()).
//
// Golden files are untrusted input. Before any data is read, every dataset is checked: its
// links stay in the file, its data is stored in the file itself (no external storage, no virtual
// dataset, every chunk present, within the file's size), only deflate, shuffle and fletcher32
// filters, and the memory it needs is what the stored bytes can hold; the sum over all datasets
// must fit max_memory. Nothing outside the file is ever opened (see spec/golden-format.md,
// "Untrusted files").
GoldenCase read_golden(const std::filesystem::path& file, const ReadOptions& options);
GoldenCase read_golden(const std::filesystem::path& file, bool require_output = true);

// Writes the case to `file` atomically: a temporary file in the same folder, then a rename.
// The file uses HDF5's newest format bounds, so its metadata is checksummed. Datasets are chunked with Fletcher32 checksums and deflate compression; inputs keep their
// element type (f16 as IEEE half, bf16 as uint16 bit patterns with element_type = "bf16").
void write_golden(const std::filesystem::path& file, const GoldenCase& c);

// The temporary files of writers that are no longer running (a write_golden or write_manifest
// killed half-way: kill -9, a crash, a power cut): `<name>.tmp.<pid>.<n>` in `dir` whose <pid>
// is not a live process. Removed, and their names returned; a live writer's files are never
// touched. write_golden does this once per folder and process before it writes. (A pid can be
// reused: a stale file whose pid now belongs to another process stays until that one ends.
// Writers on other machines sharing a folder are not seen.)
std::vector<std::string> remove_stale_temp_files(const std::filesystem::path& dir);

// The name an atomic writer of `target` writes first and renames over it: `<target>.tmp.<pid>.<n>`,
// which no other writer, process or thread, uses at the same time.
std::filesystem::path temp_path_for(const std::filesystem::path& target);

// Whether `target` is a device, FIFO or socket (-o /dev/null, a shell's >(gzip > f)): such a
// destination is written through, the finished temporary file copied into it, never replaced
// (as root, renaming over /dev/null would replace the device node with a regular file). A
// regular file is replaced; so is a symbolic link, itself.
bool writes_through(const std::filesystem::path& target);

// Copies the finished file `from` into the existing `target` (writes_through), then removes
// `from`. "" or the error.
std::string copy_into(const std::filesystem::path& from, const std::filesystem::path& target);

// Flushes a written file (and, after a rename, its folder) to the disk, so that a power cut
// after the rename leaves the new file whole, not empty. "" or the error.
std::string sync_to_disk(const std::filesystem::path& path);

}  // namespace moe::golden
