#pragma once
// The file name a case's results or shrunk copy are written under, from its name.
#include <cstddef>
#include <string>

namespace moe::conformance {

// A case name as a file name stem: anything but letters, digits, '_', '-' and '.' becomes '_',
// and a leading '.' too, so that a name from an untrusted golden file ("../x", "/etc/x", "")
// can neither point outside the folder nor make a hidden file. A name changed so, or longer than
// kCaseFileStemLimit bytes, is cut there and gets "-" and 16 hex digits of its hash: two names
// never share a file.
inline constexpr std::size_t kCaseFileStemLimit = 100;
std::string case_file_stem(const std::string& case_name);

}  // namespace moe::conformance
