#pragma once
// Whether generating a catalogue case fits the memory budget: the check generate and verify make
// before they run the reference on a case.
#include <cstdint>
#include <string>

#include "moe/generator/case_spec.hpp"

namespace moe::golden_cli {

// Throws InputError naming the catalogue, the case, its shape and both sizes when generating the
// case (with its stages, if `stages`) needs more than max_memory bytes (0: the default budget).
// A catalogue is untrusted input: without this, a case too large ends in bad_alloc (exit 3) or the
// OOM killer half-way through a run.
void require_generation_memory(const std::string& catalog, const generator::CaseSpec& c, bool stages,
                               std::uint64_t max_memory);

}  // namespace moe::golden_cli
