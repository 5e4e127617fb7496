#include "moe/conformance/case_file_name.hpp"

#include <cctype>

namespace moe::conformance {

std::string case_file_stem(const std::string& case_name) {
    std::string s = case_name.empty() ? "unnamed" : case_name;
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
    if (s.front() == '.') s.front() = '_';
    return s;
}

}  // namespace moe::conformance
