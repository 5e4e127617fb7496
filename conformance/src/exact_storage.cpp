#include "moe/conformance/exact_storage.hpp"

#include <cstdio>

#include "moe/reference/interpreter.hpp"
#include "moe/reference/storage_rounding.hpp"

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

namespace {

std::map<std::string, Tensor> reference_stages(const golden::GoldenCase& c, int threads) {
    return reference::run(c.problem, {reference::Mode::sparse, true, threads}).stages;
}

}  // namespace

bool intermediates_exact_in(const golden::GoldenCase& c, DType storage, int threads) {
    if (unit_roundoff(storage) <= unit_roundoff(DType::f32)) return true;
    if (!c.stages.empty()) return !first_inexact_intermediate(c.stages, storage);
    return !first_inexact_intermediate(reference_stages(c, threads), storage);
}

bool storage_loses_nothing(const golden::GoldenCase& c, DType storage, DType output, int threads) {
    if (unit_roundoff(storage) <= unit_roundoff(DType::f32)) return true;
    // The reference's stages, not the file's: whether a zero tolerance holds must not rest on
    // what an untrusted file stores (a stage of another shape, values the op does not produce).
    const auto stages = reference_stages(c, threads);
    if (!first_inexact_intermediate(stages, storage)) return true;
    if (output != c.problem.input(kHiddenStates).dtype()) return false;
    // The readings are the reference's: the stages decide only which values to look at.
    return !reference::storage_rounding_shows(c.problem, stages, storage, threads);
}

}  // namespace moe::conformance
