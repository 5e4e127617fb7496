#pragma once
// Building blocks of the HTML reports (report_html.cpp, selftest_html.cpp): one self-contained
// page (inline CSS, inline SVG, no script, nothing fetched), escaping, number formatting, status
// colours and the error/bound colour scale of the heatmaps. Colours are fixed and distinct, so a
// test can find the heatmap's cells in a screenshot (tests/python/check_html_report.py).
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "moe/conformance/reports.hpp"
#include "moe/conformance/results.hpp"
#include "number_text.hpp"
#include "utf8_text.hpp"

namespace moe::conformance::html {

// Text and attribute values: the page declares UTF-8, so invalid bytes become U+FFFD; control
// characters other than tab and newline, which HTML does not allow, are shown as "\xNN".
inline std::string escape(const std::string& raw) {
    std::string out;
    for (char ch : valid_utf8(raw)) {
        switch (ch) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default:
                if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n') {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(static_cast<unsigned char>(ch)));
                    out += buf;
                } else {
                    out += ch;
                }
        }
    }
    return out;
}

// Ratios, errors, bounds, seconds: three digits are all a reader compares.
inline std::string num(double v) { return number_text::formatted("%.3g", v); }

// Reference and got values, to nine digits as the text report prints them.
using number_text::value;

inline const char* status_color(Status s) {
    switch (s) {
        case Status::pass: return "#1a7f37";
        case Status::fail: return "#cf222e";
        case Status::error: return "#8250df";
        case Status::xpass: return "#bc4c00";
        case Status::xfail: return "#9a6700";
        case Status::mistrusted: return "#953800";
        default: return "#6e7781";
    }
}

// The heatmap's scale: blues within the bound, oranges to dark red beyond it, purple for inf.
struct Band {
    double upto;        // ratios <= upto (the last band: everything else)
    const char* color;
    const char* label;
};
inline constexpr Band kBands[] = {
    {0.0, "#eef3f8", "0"},          {0.1, "#c6dbef", "<= 0.1"},      {0.5, "#6baed6", "<= 0.5"},
    {1.0, "#2171b5", "<= 1"},       {10.0, "#fdae61", "<= 10"},      {1e3, "#f46d43", "<= 1e3"},
    {1e6, "#d73027", "<= 1e6"},     {INFINITY, "#a50026", "> 1e6"},  {NAN, "#40004b", "inf or class"},
};
inline std::size_t band_of(double ratio) {
    if (!std::isfinite(ratio)) return 8;
    for (std::size_t b = 0; b < 8; ++b)
        if (ratio <= kBands[b].upto) return b;
    return 7;
}

inline const char* kStyle = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1f2328; background: #ffffff; }
h1 { font-size: 22px; margin: 0 0 8px; } h2 { font-size: 18px; margin: 28px 0 8px; } h3 { font-size: 15px; margin: 18px 0 6px; }
table { border-collapse: collapse; margin: 6px 0; } th, td { padding: 2px 8px; border-bottom: 1px solid #d0d7de; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.meta { color: #57606a; } .status { font-weight: 600; } pre { background: #f6f8fa; padding: 6px 10px; overflow-x: auto; }
section.case { border-top: 2px solid #d0d7de; margin-top: 18px; }
.legend span { display: inline-block; width: 14px; height: 14px; vertical-align: middle; margin: 0 4px 0 10px; }
svg.heatmap { display: block; margin: 6px 0; }
div.matrix { overflow-x: auto; }
table.matrix td { width: 8px; min-width: 8px; height: 14px; padding: 0; border: 1px solid #ffffff; }
table.matrix th.case { writing-mode: vertical-rl; transform: rotate(180deg); font-weight: 400; font-size: 9px; line-height: 1;
  padding: 2px 0; border: 0; }
table.matrix th.row { font-weight: 400; white-space: nowrap; padding-right: 8px; }
)";

inline void begin_page(std::ostringstream& o, const std::string& title) {
    o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << escape(title)
      << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<h1>" << escape(title) << "</h1>\n";
}

inline void run_info(std::ostringstream& o, const RunInfo& info) {
    std::string backends;
    for (const auto& b : info.backends) backends += (backends.empty() ? "" : ", ") + b;
    o << "<p class=\"meta\">" << escape(info.tool_version) << " &middot; started " << escape(info.started_utc)
      << " &middot; " << num(info.seconds) << " s<br>suite " << escape(info.suite) << " &middot; tier "
      << escape(info.tier) << "<br>backends " << escape(backends);
    if (!info.command_line.empty()) o << "<br>command <code>" << escape(info.command_line) << "</code>";
    o << "</p>\n";
}

inline void end_page(std::ostringstream& o) { o << "</body>\n</html>\n"; }

}  // namespace moe::conformance::html
