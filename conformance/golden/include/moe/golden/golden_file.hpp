#pragma once
// Reading and writing golden files: one MOE case per HDF5 file. spec/golden-format.md is the
// contract; this is its only implementation in the project.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "moe/spec/problem.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::golden {

inline constexpr const char* kFormatName = "moe-golden";
inline constexpr std::int64_t kFormatVersion = 1;

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

// Why a file could not be used. The message names the file and the dataset or attribute.
class FileError : public std::runtime_error {
public:
    enum class Kind {
        unreadable,  // not an HDF5 file, or cannot be opened
        corrupt,     // a checksum (Fletcher32) does not match: the data changed after writing
        malformed,   // a required attribute or dataset is missing, or has the wrong type/shape
    };
    FileError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
    Kind kind() const { return kind_; }

private:
    Kind kind_;
};

// Reads root attributes, /inputs, and (when present) /outputs and /stages. With
// require_output, a file without /outputs/output is malformed. Resolved-parameter attributes,
// when present, must agree with resolve(attributes). Throws FileError; problem rules are not
// checked here (call validate()).
GoldenCase read_golden(const std::filesystem::path& file, bool require_output = true);

// Writes the case to `file` atomically: a temporary file in the same folder, then a rename.
// Datasets are chunked with Fletcher32 checksums and deflate compression; inputs keep their
// element type (f16 as IEEE half, bf16 as uint16 bit patterns with element_type = "bf16").
void write_golden(const std::filesystem::path& file, const GoldenCase& c);

}  // namespace moe::golden
