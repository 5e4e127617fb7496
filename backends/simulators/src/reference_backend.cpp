// `reference` and `reference_dense`: the f64 interpreter behind the backend interface. Its
// output is rounded to the op's output type like any backend's, so the suite checks itself.
#include "moe/backends/reference_backend.hpp"

#include "moe/reference/interpreter.hpp"

namespace moe::backends {

ReferenceBackend::ReferenceBackend(bool dense) : dense_(dense) {}

std::string ReferenceBackend::name() const { return dense_ ? "reference_dense" : "reference"; }

std::string ReferenceBackend::description() const {
    return dense_ ? "f64 reference, dense mode: the op's formula over all experts"
                  : "f64 reference, sparse mode: only the selected experts";
}

Support ReferenceBackend::supports(const Problem&) const { return {}; }

Precision ReferenceBackend::precision(DType) const { return {DType::f64, DType::f64}; }

Output ReferenceBackend::run(const Problem& p, bool want_stages) {
    reference::Options o;
    o.mode = dense_ ? reference::Mode::dense : reference::Mode::sparse;
    o.stages = want_stages;
    o.threads = threads_;
    reference::Result r = reference::run(p, o);
    const Tensor& x = p.input(kHiddenStates);
    return {Tensor::from_f64(x.dtype(), x.shape(), r.output.to_f64()), std::move(r.stages)};
}

}  // namespace moe::backends
