#pragma once
// From a catalogue case to the op's inputs: shapes from the resolved layouts, values from the
// case's fills and seed, routing from its scenario.
#include "moe/generator/case_spec.hpp"
#include "moe/spec/problem.hpp"

namespace moe::generator {

struct SynthesisReport {
    std::size_t dropped_pairs = 0;  // capacity_factor: pairs whose weight was set to 0
};

Problem synthesize(const CaseSpec& c, SynthesisReport* report = nullptr);

// Draws token `token`'s hidden_states row again from a stream of its own (attempt >= 1).
void redraw_token(Problem& p, const CaseSpec& c, std::size_t token, int attempt);

}  // namespace moe::generator
