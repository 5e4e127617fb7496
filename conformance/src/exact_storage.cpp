#include "moe/conformance/exact_storage.hpp"

#include <cstdio>

#include "moe/reference/interpreter.hpp"

namespace moe::conformance {

std::optional<std::string> first_inexact_intermediate(const std::map<std::string, Tensor>& stages, DType storage) {
    for (const auto& [name, t] : stages) {
        for (std::size_t i = 0; i < t.size(); ++i) {
            const double v = t.get(i);
            if (round_to(storage, v) == v || v != v) continue;  // NaN: judged by class elsewhere
            const Shape& s = t.shape();
            char buf[160];
            if (s.size() == 3)
                std::snprintf(buf, sizeof buf, "%s[%zu, %zu, %zu] = %.17g", name.c_str(), i / s[2] / s[1],
                              i / s[2] % s[1], i % s[2], v);
            else
                std::snprintf(buf, sizeof buf, "%s element %zu = %.17g", name.c_str(), i, v);
            return std::string(buf) + " is not a " + std::string(dtype_name(storage)) + " value";
        }
    }
    return std::nullopt;
}

bool intermediates_exact_in(const golden::GoldenCase& c, DType storage, int threads) {
    if (unit_roundoff(storage) <= unit_roundoff(DType::f32)) return true;
    if (!c.stages.empty()) return !first_inexact_intermediate(c.stages, storage);
    const auto stages = reference::run(c.problem, {reference::Mode::sparse, true, threads}).stages;
    return !first_inexact_intermediate(stages, storage);
}

}  // namespace moe::conformance
