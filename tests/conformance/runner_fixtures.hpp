#pragma once
// For the runner and selftest tests: a backend written against the contract (moe/spec/backend.hpp)
// whose behaviour the test chooses, and a small suite of golden files in a temporary folder.
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "moe/generator/golden_builder.hpp"
#include "moe/conformance/runner.hpp"
#include "moe/golden/golden_file.hpp"
#include "moe/reference/interpreter.hpp"
#include "moe/spec/backend.hpp"
#include "small_cases.hpp"
#include "temp_dir.hpp"

namespace moe::test {

enum class Behaviour {
    correct,          // the reference's output (and stages)
    wrong_output,     // every output element 1 % too large
    wrong_act,        // act stage and output off: provides stages
    throws,           // run() throws "device lost"
    no_f16,           // declares f16 problems unsupported, computes the others correctly
    unavailable,      // availability() says no
    slow_prepare,     // correct, after a prepare() of 400 ms
};

class ScriptedBackend : public Backend {
public:
    ScriptedBackend(std::string name, Behaviour b) : name_(std::move(name)), b_(b) {}
    std::string name() const override { return name_; }
    std::string description() const override { return "a backend written in the test"; }
    Availability availability() const override {
        if (b_ == Behaviour::unavailable) return {false, "no device in this test"};
        return {};
    }
    Support supports(const Problem& p) const override {
        if (b_ == Behaviour::no_f16 && p.input(kHiddenStates).dtype() == DType::f16)
            return {false, "f16 inputs are not supported by this backend"};
        return {};
    }
    Precision precision(DType) const override { return {DType::f32, DType::f32}; }
    void prepare(const Problem&) override {
        if (b_ == Behaviour::slow_prepare) std::this_thread::sleep_for(std::chrono::milliseconds(400));
    }
    bool provides_stages() const override { return b_ == Behaviour::wrong_act || b_ == Behaviour::correct; }
    Output run(const Problem& p, bool want_stages) override {
        ++runs;
        if (b_ == Behaviour::throws) throw std::runtime_error("device lost");
        reference::Result r = reference::run(p, {reference::Mode::sparse, want_stages, 1});
        Output o{std::move(r.output), std::move(r.stages)};
        if (b_ == Behaviour::wrong_output || b_ == Behaviour::wrong_act)
            for (std::size_t i = 0; i < o.output.size(); ++i) o.output.set(i, 1.01 * o.output.get(i));
        if (b_ == Behaviour::wrong_act) {
            Tensor& act = o.stages.at("act");
            for (std::size_t i = 0; i < act.size(); ++i) act.set(i, 1.01 * act.get(i));
        }
        return o;
    }
    int runs = 0;

private:
    std::string name_;
    Behaviour b_;
};

// One golden file per case, written the way moe-golden writes them (build_golden, write_golden).
struct SuiteCase {
    std::string name, tier;
    ExpertType type;
    Convention conv;
    DType dtype;
};

// alpha (quick, f32), beta (ci, f16), gamma (full, f32): files <dir>/<name>.h5, in name order.
inline std::vector<SuiteCase> default_suite() {
    return {{"alpha", "quick", ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, DType::f32},
            {"beta", "ci", ExpertType::gemm3_swiglu, Convention::spec, DType::f16},
            {"gamma", "full", ExpertType::gemm3_swiglu, Convention::openvino, DType::f32}};
}

inline std::vector<std::string> write_suite(const TempDir& dir, const std::vector<SuiteCase>& cases = default_suite()) {
    std::vector<std::string> files;
    for (const auto& sc : cases) {
        generator::CaseSpec spec = small_spec(sc.type, sc.conv, 5, 12, 6, 4, 2, sc.dtype);
        spec.name = sc.name;
        spec.tier = sc.tier;
        const auto file = dir / (sc.name + ".h5");
        golden::write_golden(file, generator::build_golden(spec, {}));
        files.push_back(file.string());
    }
    return files;
}

// The case names of a run's results, in order.
inline std::vector<std::string> case_names(const conformance::RunOutcome& r) {
    std::vector<std::string> names;
    for (const auto& x : r.results) names.push_back(x.case_name);
    return names;
}

// Options for a quiet run of `files` (no progress lines).
inline conformance::RunOptions quiet_options(const std::vector<std::string>& files) {
    conformance::RunOptions o;
    o.files = files;
    o.progress = false;
    return o;
}

}  // namespace moe::test
