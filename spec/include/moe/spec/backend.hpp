#pragma once
// The contract between moe-conform and an implementation under test. It lives with the spec, not
// with the backends, so that the comparison engine, the runner and anything built on them (a
// plugin host, a Python module) depend on this header alone and never on a backend's libraries.
// Deliberately narrow (problem in, tensors out, a few declarations) so that it maps one-to-one
// onto a versioned C ABI for backends built outside the project.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moe/spec/problem.hpp"
#include "moe/spec/tensor.hpp"

namespace moe {

struct Availability {
    bool available = true;
    std::string reason;  // why not, when unavailable ("no OpenCL platform found")
};

struct Support {
    bool supported = true;
    std::string reason;  // why not ("bf16 inputs are not supported")
};

// The arithmetic a backend uses for one input element type; it sets the tolerance
// (spec/tolerance.md). compute: accumulation and elementwise math. storage: the type of the
// intermediates it keeps between stages (gate_up, act, down).
struct Precision {
    DType compute = DType::f32;
    DType storage = DType::f32;
    // Compressed weights (spec/compressed.md): the type W_f = (W - Z) * S is rounded to once
    // before the GEMM uses it. Absent: the compute type.
    std::optional<DType> dequant;

    Precision() = default;
    Precision(DType compute_type, DType storage_type, std::optional<DType> dequant_type = std::nullopt)
        : compute(compute_type), storage(storage_type), dequant(dequant_type) {}
    DType dequant_type() const { return dequant.value_or(compute); }
};

struct Output {
    Tensor output;                         // the op's output: the shape of hidden_states, any floating type
    std::map<std::string, Tensor> stages;  // optional, golden layout [T, K, features] (spec/golden-format.md)
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    virtual std::string description() const = 0;
    virtual Availability availability() const { return {}; }
    // Called with a validated problem; an unsupported one is reported as SKIP with the reason.
    virtual Support supports(const Problem& p) const = 0;
    virtual Precision precision(DType data_type) const = 0;
    // The precision for one problem; by default the one of its data type. A backend whose
    // declaration differs from case to case (replayed result files) overrides it.
    virtual Precision precision_for(const Problem& p) const { return precision(p.input(kHiddenStates).dtype()); }
    virtual bool provides_stages() const { return false; }
    // Optional: precompute what depends only on the problem's weights (conversion, repacking), as
    // an inference engine does when it loads a model. A later run(p) on the same, unchanged
    // problem object may use it; any other problem is computed without it. moe-bench times it
    // separately from run().
    virtual void prepare(const Problem& p) { (void)p; }
    // Computes the problem. Exceptions are reported as ERROR with their message.
    virtual Output run(const Problem& p, bool want_stages) = 0;
    // Optional: device time of the last run() per kernel name, in seconds, where the backend can
    // measure it (a GPU queue's profiling events). Empty when it cannot; moe-bench prints it.
    virtual std::map<std::string, double> last_kernel_times() const { return {}; }
};

// A backend made where it runs: an isolated run (conformance/runner.hpp) makes each backend inside
// its worker processes, never in the parent before a fork, so that a device context or a thread
// pool is never inherited across fork().
struct BackendMaker {
    std::string name;
    std::function<std::unique_ptr<Backend>()> make;
    std::string library;  // the plugin file it loads; "" for a built-in backend
};

}  // namespace moe
