#pragma once
// The word a repro line starts with: the tool as the user can run it again. A bare `moe-conform`
// was "command not found" when pasted by a user who ran build/bin/moe-conform, or an installed
// prefix that is not on PATH.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "moe/conformance/shell_word.hpp"

namespace moe::cli {

namespace detail {

// The file a shell would run for the bare `name`: the first PATH folder holding it as an
// executable (an empty PATH entry is the current folder, as for the shell); empty if none.
inline std::filesystem::path found_on_path(const std::string& name) {
    const char* path = std::getenv("PATH");
    if (path == nullptr) return {};
    const std::string folders = path;
    for (std::size_t start = 0;;) {
        const std::size_t end = folders.find(':', start);
        const std::string folder = folders.substr(start, end == std::string::npos ? std::string::npos : end - start);
        const std::filesystem::path candidate = std::filesystem::path(folder.empty() ? "." : folder) / name;
        std::error_code ec;
        if (std::filesystem::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0) return candidate;
        if (end == std::string::npos) return {};
        start = end + 1;
    }
}

}  // namespace detail

// argv[0] as typed where it holds a slash (build/bin/moe-conform stays relative, as the --case
// paths beside it in the line do; the shell ran it from this folder, so the line runs from here
// too); the bare name where PATH finds this very binary under it. Otherwise (a launcher that set
// argv[0] to a name PATH does not lead here) this binary's absolute path, and `fallback` only
// where even that is unknown. Shell-quoted: a prefix may hold spaces.
inline std::string rerun_tool(const char* argv0, const std::string& fallback) {
    const std::string typed = argv0 == nullptr ? "" : argv0;
    if (typed.find('/') != std::string::npos) return conformance::shell_word(typed);
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return conformance::shell_word(typed.empty() ? fallback : typed);
    if (!typed.empty()) {
        const std::filesystem::path found = detail::found_on_path(typed);
        if (!found.empty() && std::filesystem::equivalent(found, self, ec)) return conformance::shell_word(typed);
    }
    return conformance::shell_word(self.string());
}

}  // namespace moe::cli
