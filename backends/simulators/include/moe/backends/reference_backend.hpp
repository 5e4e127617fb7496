#pragma once
#include <algorithm>
#include <thread>

#include "moe/spec/backend.hpp"

namespace moe::backends {

// `reference` and `reference_dense`: the f64 interpreter behind the backend contract, sparse (the
// selected experts) or dense (the formula over every expert, as the op text writes it).
class ReferenceBackend : public Backend {
public:
    explicit ReferenceBackend(bool dense);
    std::string name() const override;
    std::string description() const override;
    Support supports(const Problem& p) const override;
    Precision precision(DType data_type) const override;
    bool provides_stages() const override { return true; }
    Output run(const Problem& p, bool want_stages) override;

private:
    bool dense_;
    int threads_ = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

}  // namespace moe::backends
