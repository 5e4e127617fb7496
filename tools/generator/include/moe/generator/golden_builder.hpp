#pragma once
// Turns inputs into a golden case: the reference output (and stages), plus the dense reading's
// output where non-finite data makes the two readings differ (spec/errata.md, E11).
#include <string>

#include "moe/golden/golden_file.hpp"
#include "moe/generator/case_spec.hpp"
#include "moe/generator/kink_guard.hpp"

namespace moe::generator {

inline constexpr const char* kGeneratorName = "moe-golden 0.1.0";

struct BuildOptions {
    bool stages = false;
    int threads = 1;
};

struct BuildReport {
    KinkReport kinks;
    double exact_bits = 0.0;        // exact cases: the most significand bits any step needs
    std::size_t values_rounded = 0; // storage-rounding cases: the intermediates the type lacks
    bool dense_differs = false;     // output_dense was stored
    double reference_seconds = 0.0; // time in the reference (sparse mode)
    std::size_t dropped_pairs = 0;  // capacity_factor cases: (token, expert) pairs given weight 0
};

// Fills c.outputs (and c.stages) from c.problem's inputs.
void compute_outputs(golden::GoldenCase& c, const BuildOptions& o, BuildReport* report = nullptr);

// Synthesises a catalogue case and computes its outputs.
golden::GoldenCase build_golden(const CaseSpec& spec, const BuildOptions& o, BuildReport* report = nullptr);

}  // namespace moe::generator
