#pragma once
// What the run report and the selftest document write alike: non-finite numbers, and the fields
// that say which run a document is from.
#include <cmath>

#include <nlohmann/json.hpp>

#include "moe/conformance/reports.hpp"

namespace moe::conformance {

// Finite doubles are JSON numbers; NaN and the infinities, which JSON cannot represent, are the
// strings "nan", "inf" and "-inf" (spec/report-format.md, "Non-finite numbers").
inline nlohmann::ordered_json json_real(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

// A document's first fields, in the documented order: format, format_version 1, tool,
// command_line, started_utc, seconds, suite.
inline nlohmann::ordered_json json_run_header(const char* format, const RunInfo& info) {
    nlohmann::ordered_json doc;
    doc["format"] = format;
    doc["format_version"] = 1;
    doc["tool"] = info.tool_version;
    doc["command_line"] = info.command_line;
    doc["started_utc"] = info.started_utc;
    doc["seconds"] = json_real(info.seconds);
    doc["suite"] = info.suite;
    return doc;
}

}  // namespace moe::conformance
