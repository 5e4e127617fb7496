#pragma once
// Whether two golden cases hold the same data, bit for bit: `moe-golden verify` compares a stored
// case with its regeneration through it.
#include <string>
#include <vector>

#include "moe/golden/golden_file.hpp"

namespace moe::golden {

// One line per difference (op or case attributes, a tensor missing, surplus or changed); empty
// when the cases are identical.
std::vector<std::string> case_differences(const GoldenCase& want, const GoldenCase& got);

}  // namespace moe::golden
