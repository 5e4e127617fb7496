#pragma once
// The bundled golden suite in the source tree (data/golden), as the tests name it on command lines,
// and the path of one file in it: the folder is spelt here once, so moving the suite touches one line.
#include <string>

namespace moe::test {

inline const std::string kBundledSuite = std::string(MOE_SOURCE_DIR) + "/data/golden";

// The path of `file_name` (e.g. "topk_one.h5") in the bundled suite, whether or not it exists.
inline std::string bundled_case(const std::string& file_name) { return kBundledSuite + "/" + file_name; }

}  // namespace moe::test
