#pragma once
// shrink's --case when it names no file: where the folder is a suite (it has a MANIFEST.sha256),
// the error names the suite and, when one of its cases has a close name, suggests it. (A file
// that is there is checked against the manifest as run checks its --case files:
// conform_cli::manifest_agrees.)
#include <optional>
#include <string>
#include <vector>

namespace moe::shrink {

// Throws InputError when `file` does not exist: "--case F: no such file", or, in a folder with
// a manifest, "--case F: no case G.h5 in the suite DIR (its MANIFEST.sha256 lists N cases); did you mean
// DIR/C.h5?". Returns when it exists (what it holds is for the reading to judge).
void check_case_exists(const std::string& file);

// The name among `names` closest to `wanted` (edit distance; `wanted` + ".h5" when it has no
// extension), when it is close enough to be a typo: at most 2 edits, or a quarter of the name.
std::optional<std::string> closest_name(const std::string& wanted, const std::vector<std::string>& names);

}  // namespace moe::shrink
