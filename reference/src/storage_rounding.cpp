#include "moe/reference/storage_rounding.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

#include "moe/reference/interpreter.hpp"

namespace moe::reference {

namespace {

bool lacks(DType storage, double v) { return !std::isnan(v) && round_to(storage, v) != v; }

// Equal, NaN matching NaN.
bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// The names of the stages set in `mask` ("gate_up, act").
std::string stage_list(const std::vector<std::string>& names, unsigned mask) {
    std::string s;
    for (std::size_t i = 0; i < names.size(); ++i)
        if (mask >> i & 1u) s += (s.empty() ? "" : ", ") + names[i];
    return s;
}

}  // namespace

std::size_t values_storage_lacks(const std::map<std::string, Tensor>& stages, DType storage) {
    std::size_t n = 0;
    for (const auto& [name, t] : stages)
        for (std::size_t i = 0; i < t.size(); ++i) n += lacks(storage, t.get(i));
    return n;
}

std::optional<std::string> storage_rounding_shows(const Problem& p, const std::map<std::string, Tensor>& stages,
                                                  DType storage, int threads) {
    const Dims d = validate(p);
    const std::string type(dtype_name(storage));
    for (const auto& [name, s] : stages)  // the layout the slot test below indexes
        if (s.rank() != 3 || s.shape()[0] != d.T || s.shape()[1] != d.K)
            return "stage " + name + " has shape " + shape_to_string(s.shape()) + ", not [T, K, features]";
    // 1. At most one slot per token with values the type lacks (stages are [T, K, width]).
    for (std::size_t t = 0; t < d.T; ++t) {
        std::size_t first = d.K;
        for (std::size_t k = 0; k < d.K; ++k) {
            bool inexact = false;
            for (const auto& [name, s] : stages) {
                const std::size_t w = s.shape()[2], base = (t * d.K + k) * w;
                for (std::size_t j = 0; j < w && !inexact; ++j) inexact = lacks(storage, s.get(base + j));
            }
            if (!inexact) continue;
            if (first < d.K)
                return "token " + std::to_string(t) + " has values " + type + " lacks in slots " +
                       std::to_string(first) + " and " + std::to_string(k) +
                       ": a backend may round one and keep the other, a mix no reading covers";
            first = k;
        }
    }
    // 2. Every reading rounds to the data type as the op does.
    const DType data = p.input(kHiddenStates).dtype();
    const std::vector<std::string> names = stage_names(p.attributes.expert_type);
    const Tensor exact = run(p, {Mode::sparse, false, threads}).output;
    for (unsigned mask = 1; mask < (1u << names.size()); ++mask) {
        Options o{Mode::sparse, false, threads};
        o.rounded_stages = mask;
        o.storage = storage;
        const Tensor reading = run(p, o).output;
        for (std::size_t i = 0; i < exact.size(); ++i) {
            const double want = round_to(data, exact.get(i)), got = round_to(data, reading.get(i));
            if (same(want, got)) continue;
            char buf[200];
            std::snprintf(buf, sizeof buf, "output[%zu, %zu] is %.9g in %s, %.9g with %s rounded to %s", d.H ? i / d.H : 0,
                          d.H ? i % d.H : 0, want, std::string(dtype_name(data)).c_str(), got,
                          stage_list(names, mask).c_str(), type.c_str());
            return std::string(buf);
        }
    }
    return std::nullopt;
}

}  // namespace moe::reference
