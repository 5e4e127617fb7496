#pragma once
// Whether a text contains a part: the one substring check the tests share, instead of a copy in
// each file.
#include <string>

namespace moe::test {

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace moe::test
