#pragma once
// MANIFEST.sha256: the SHA-256 of every golden file of a folder, in the format `sha256sum -c`
// reads ("<hex>  <file name>" per line, sorted by name).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace moe::golden {

// Lowercase hex. Throws InputError when the file cannot be read or is not a regular file (a FIFO
// is refused at once, never waited on).
std::string sha256_file(const std::filesystem::path& file);

inline constexpr const char* kManifestName = "MANIFEST.sha256";

// Writes the manifest of every *.h5 file in `dir` (atomically).
void write_manifest(const std::filesystem::path& dir);

// File name -> digest. Throws InputError naming the file and line when malformed.
std::map<std::string, std::string> read_manifest(const std::filesystem::path& dir);

// What is wrong between `dir`'s *.h5 files and its manifest, one line each, starting with the
// file's name: a file not listed, a digest that differs, a file that cannot be read or is not a
// regular file, a listed file missing. Empty when they agree. Throws InputError when the
// manifest is absent or malformed.
std::vector<std::string> manifest_problems(const std::filesystem::path& dir);

}  // namespace moe::golden

namespace moe::golden {

// Where a golden file's folder has a manifest that lists it: whether its digest matches
// (nullopt when it does, or when there is no manifest or it does not list the file), else the
// problem ("x.h5: SHA-256 differs from MANIFEST.sha256").
std::optional<std::string> manifest_problem_for_file(const std::filesystem::path& file);

}  // namespace moe::golden
