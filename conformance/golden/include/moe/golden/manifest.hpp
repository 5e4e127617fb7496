#pragma once
// MANIFEST.sha256: the SHA-256 of every golden file of a folder, in the format `sha256sum -c`
// reads ("<hex>  <file name>" per line, sorted by name).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace moe::golden {

std::string sha256_file(const std::filesystem::path& file);  // lowercase hex

inline constexpr const char* kManifestName = "MANIFEST.sha256";

// Writes the manifest of every *.h5 file in `dir` (atomically).
void write_manifest(const std::filesystem::path& dir);

// File name -> digest. Throws InputError naming the file and line when malformed.
std::map<std::string, std::string> read_manifest(const std::filesystem::path& dir);

// What is wrong between `dir`'s *.h5 files and its manifest, one line each: a file not listed,
// a digest that differs, a listed file missing. Empty when they agree. Throws InputError when the
// manifest is absent or malformed.
std::vector<std::string> manifest_problems(const std::filesystem::path& dir);

}  // namespace moe::golden
