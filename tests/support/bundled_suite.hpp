#pragma once
// The bundled golden suite in the source tree (data/golden), as the tests name it on command lines.
#include <string>

namespace moe::test {

inline const std::string kBundledSuite = std::string(MOE_SOURCE_DIR) + "/data/golden";

}  // namespace moe::test
