#pragma once
// repro lines are pasted into a shell: every path, backend name and device string in them must
// come out as one word, whatever it holds (spaces, &, parentheses, quotes, globs).
#include <algorithm>
#include <string>

#include "moe/spec/printable.hpp"

namespace moe::conformance {

// `s` itself where it holds only characters no shell treats specially, else single-quoted (a
// quote inside written as '\''). Where `s` holds bytes a terminal acts on or cannot show
// (controls, invalid UTF-8: moe/spec/printable.hpp), the line printed must not carry them, yet
// must still name the real path: bash's $'...' quoting, with those bytes as \xNN.
inline std::string shell_word(const std::string& s) {
    const auto plain = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               std::string("_-./:=,+@%").find(c) != std::string::npos;
    };
    bool quote = s.empty();
    for (char c : s) quote = quote || !plain(c);
    if (!quote) return s;
    const std::string shown = printable(s);
    // printable() writes a backslash as two characters, any other byte it escapes as four.
    if (shown.size() != s.size() + static_cast<std::size_t>(std::count(s.begin(), s.end(), '\\'))) {
        std::string q = "$'";
        for (char c : shown) q += c == '\'' ? std::string("\\'") : std::string(1, c);
        return q + "'";
    }
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

}  // namespace moe::conformance
