#pragma once
// Result files: what an implementation under test computed for one golden case, written by any
// framework (h5py in a few lines, spec/results-format.md) and judged by `moe-conform check`.
// Untrusted input like golden files: the same refusals, checksums and memory budget apply.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "moe/spec/backend.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::golden {

inline constexpr const char* kResultFormatName = "moe-result";
inline constexpr std::int64_t kResultFormatVersion = 1;

struct ResultFile {
    std::string case_name;       // root attribute `case`
    std::string golden_sha256;   // root attribute `golden_sha256`: the golden file it answers ("" for .npy)
    std::string implementation;  // root attribute `implementation`, "" when absent
    std::optional<Precision> precision;  // root attributes `compute_type` / `storage_type`
    Tensor output;                       // /outputs/output: any floating type
    std::map<std::string, Tensor> stages;  // /stages/<name>: any floating type, [T, K, features]
};

// Throws FileError naming the file and the attribute or dataset at fault. max_memory 0: the
// default budget (golden::default_max_memory()). read_precision false: the precision attributes
// are neither read nor checked (`check --precision` overrides whatever the file says of them).
ResultFile read_result(const std::filesystem::path& file, std::uint64_t max_memory = 0, bool read_precision = true);

// Writes atomically, with the golden files' format bounds, chunking and checksums.
void write_result(const std::filesystem::path& file, const ResultFile& r);

// A .npy file holding the output alone (float64, float32 or float16, C order): case name,
// golden hash and precision come from the command line. Throws FileError.
ResultFile read_npy_result(const std::filesystem::path& file, std::uint64_t max_memory = 0);

}  // namespace moe::golden
