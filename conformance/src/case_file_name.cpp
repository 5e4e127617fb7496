#include "moe/conformance/case_file_name.hpp"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace moe::conformance {

std::string case_file_stem(const std::string& case_name) {
    std::string s = case_name.empty() ? "unnamed" : case_name;
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
    if (s.front() == '.') s.front() = '_';
    // A plain name ending as a hashed stem does ("-" and 16 hex digits) is hashed too: it could
    // be the stem of another name.
    const bool looks_hashed = s.size() > 17 && s[s.size() - 17] == '-' &&
                              s.find_first_not_of("0123456789abcdef", s.size() - 16) == std::string::npos;
    if (s == case_name && s.size() <= kCaseFileStemLimit && !looks_hashed) return s;
    // Changed or cut: names that map alike ("a<b" and "a>b") would write one file over the other,
    // and a golden file's 300-byte name would be past the file system's limit. The name's FNV-1a
    // hash tells them apart (the files are matched to cases by their `case` attribute, not by name).
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : case_name) h = (h ^ c) * 1099511628211ull;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return s.substr(0, kCaseFileStemLimit) + "-" + hex;
}

}  // namespace moe::conformance
