#pragma once
// Finite doubles are JSON numbers; NaN and the infinities, which JSON cannot represent, are the
// strings "nan", "inf" and "-inf" (spec/report-format.md, "Non-finite numbers"). Shared by the
// run report and the selftest document so that both spell them alike.
#include <cmath>

#include <nlohmann/json.hpp>

namespace moe::conformance {

inline nlohmann::ordered_json json_real(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

}  // namespace moe::conformance
