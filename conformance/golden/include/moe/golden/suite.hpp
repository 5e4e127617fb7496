#pragma once
// A suite is a folder of golden files; a run selects cases from it by name globs and by tier.
// Used by the generator (which cases to write) and the runner (which cases to run) alike.
#include <string>
#include <vector>

namespace moe::golden {

// Every *.h5 file in `dir`, sorted by name. Throws InputError if there is none.
std::vector<std::string> suite_files(const std::string& dir);

// Whether a run of tier `run_tier` (quick < ci < full) includes a case of tier `case_tier`.
bool tier_includes(const std::string& run_tier, const std::string& case_tier);

// Shell-style glob: '*' any run of characters, '?' one character; the whole text must match.
bool glob_match(const std::string& pattern, const std::string& text);

}  // namespace moe::golden
