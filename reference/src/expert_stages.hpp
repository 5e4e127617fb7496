#pragma once
// Per-pair intermediates collected while experts run, laid out [T, K, features]. Internal to
// the reference.
#include <map>
#include <string>
#include <vector>

#include "moe/spec/problem.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::reference::detail {

class StageCollector {
public:
    StageCollector(bool enabled, const Dims& d) : enabled_(enabled), d_(d) {}
    bool enabled() const { return enabled_; }
    // Stores `width` values of `name` for (token, slot).
    void put(const std::string& name, std::size_t width, std::size_t token, std::size_t slot, const double* v) {
        if (!enabled_) return;
        auto& buf = buffers_[name];
        if (buf.values.empty()) {
            buf.width = width;
            buf.values.assign(d_.T * d_.K * width, 0.0);
        }
        std::copy(v, v + width, buf.values.begin() + static_cast<std::ptrdiff_t>((token * d_.K + slot) * width));
    }
    // Stage tensors; `names` fixes which exist (with their widths) even when T = 0.
    std::map<std::string, Tensor> take(const std::vector<std::pair<std::string, std::size_t>>& names) {
        std::map<std::string, Tensor> out;
        if (!enabled_) return out;
        for (const auto& [name, width] : names) {
            auto& buf = buffers_[name];
            if (buf.values.empty()) buf.values.assign(d_.T * d_.K * width, 0.0);
            out.emplace(name, Tensor::from_f64(DType::f64, {d_.T, d_.K, width}, buf.values));
        }
        return out;
    }

private:
    struct Buffer {
        std::size_t width = 0;
        std::vector<double> values;
    };
    bool enabled_;
    Dims d_;
    std::map<std::string, Buffer> buffers_;
};

// (name, width) of each stage of the expert type, in pipeline order.
std::vector<std::pair<std::string, std::size_t>> stage_layout(ExpertType t, const Dims& d);

}  // namespace moe::reference::detail
