#pragma once
// repro lines are pasted into a shell: every path, backend name and device string in them must
// come out as one word, whatever it holds (spaces, &, parentheses, quotes, globs).
#include <string>

namespace moe::conformance {

// `s` itself where it holds only characters no shell treats specially, else single-quoted (a
// quote inside written as '\'').
inline std::string shell_word(const std::string& s) {
    const auto plain = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               std::string("_-./:=,+@%").find(c) != std::string::npos;
    };
    bool quote = s.empty();
    for (char c : s) quote = quote || !plain(c);
    if (!quote) return s;
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

}  // namespace moe::conformance
