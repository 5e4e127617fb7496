#pragma once
// A --case of moe-conform run, check or shrink that names no file: where the folder is a suite
// (it has a MANIFEST.sha256), the error names the suite and, when one of its cases has a close
// name, suggests it (conform_cli::cases_exist calls it for each). (A file that is there is checked
// against the manifest afterwards: conform_cli::manifest_agrees.)
#include <optional>
#include <string>
#include <vector>

namespace moe::shrink {

// Throws InputError when `file` does not exist: "--case F: no such file", or, in a folder with
// a manifest, "--case F: no case G.h5 in the suite DIR (its MANIFEST.sha256 lists N cases); did you mean
// DIR/C.h5?"; and when it is a folder ("--case F: a folder, not a golden file"). Returns when it
// exists (what it holds, a FIFO included, is for the reading to judge).
void check_case_exists(const std::string& file);

// The name among `names` closest to `wanted` (edit distance; `wanted` + ".h5" when it has no
// extension), when it is close enough to be a typo: at most 2 edits, or a quarter of the name.
std::optional<std::string> closest_name(const std::string& wanted, const std::vector<std::string>& names);

}  // namespace moe::shrink
