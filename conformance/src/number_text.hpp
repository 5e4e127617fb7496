#pragma once
// Numbers as the reports print them (report_text.cpp, html_page.hpp): one formatting for the text
// and HTML pages, so that both show a value alike.
#include <cmath>
#include <cstdio>
#include <string>

namespace moe::conformance::number_text {

// printf's `format` of v, and "nan", "inf", "-inf" for the non-finite.
inline std::string formatted(const char* format, double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

// Reference and got values: nine significant digits. With three, an element 113 x over an f32
// bound read "reference 0.179, got 0.179": the difference was below the digits.
inline std::string value(double v) { return formatted("%.9g", v); }

}  // namespace moe::conformance::number_text
