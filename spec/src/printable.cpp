#include "moe/spec/printable.hpp"

#include <cstdint>

namespace moe {

namespace {

// The length of the well-formed UTF-8 sequence at s[0] and its code point, or 0 (overlong forms,
// surrogates, code points past U+10FFFF and truncated sequences are not well formed).
std::size_t utf8_sequence(std::string_view s, std::uint32_t& cp) {
    const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    const unsigned char lead = b(0);
    std::size_t n;
    std::uint32_t min;
    if (lead < 0x80) {
        cp = lead;
        return 1;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
        n = 2, cp = lead & 0x1fu, min = 0x80;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        n = 3, cp = lead & 0x0fu, min = 0x800;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        n = 4, cp = lead & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    if (s.size() < n) return 0;
    for (std::size_t i = 1; i < n; ++i) {
        if ((b(i) & 0xc0u) != 0x80u) return 0;
        cp = (cp << 6) | (b(i) & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

// Code points a terminal or a text viewer acts on rather than shows.
bool acts_on_display(std::uint32_t cp) {
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
           (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

void escape_byte(unsigned char ch, std::string& out) {
    static const char* hex = "0123456789abcdef";
    out += "\\x";
    out += hex[ch >> 4];
    out += hex[ch & 15];
}

}  // namespace

std::string printable(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        std::uint32_t cp = 0;
        const std::size_t n = utf8_sequence(text.substr(i), cp);
        if (n == 0) {
            escape_byte(static_cast<unsigned char>(text[i++]), out);
            continue;
        }
        if (cp == '\\') {
            out += "\\\\";
        } else if (acts_on_display(cp)) {
            for (std::size_t k = 0; k < n; ++k) escape_byte(static_cast<unsigned char>(text[i + k]), out);
        } else {
            out.append(text.substr(i, n));
        }
        i += n;
    }
    return out;
}

std::string from_printable(std::string_view printed) {
    std::string out;
    out.reserve(printed.size());
    for (std::size_t i = 0; i < printed.size(); ++i) {
        if (printed[i] == '\\' && i + 1 < printed.size() && printed[i + 1] == '\\') {
            out += '\\';
            ++i;
        } else if (printed[i] == '\\' && i + 3 < printed.size() && printed[i + 1] == 'x' &&
                   hex_digit(printed[i + 2]) >= 0 && hex_digit(printed[i + 3]) >= 0) {
            out += static_cast<char>(hex_digit(printed[i + 2]) * 16 + hex_digit(printed[i + 3]));
            i += 3;
        } else {
            out += printed[i];
        }
    }
    return out;
}

}  // namespace moe
