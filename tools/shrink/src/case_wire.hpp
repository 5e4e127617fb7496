#pragma once
// A golden case and a verdict as bytes, for the worker process of an isolated shrink
// (oracle_worker.hpp): a candidate is made after the worker started, so it can only reach the
// worker down its socket, and the verdict comes back the same way. The case as
// moe/golden/case_bytes.hpp writes it (every field, once for both worker processes), its
// tensors' element bytes after it as they are: the first candidates of a model-sized case are
// hundreds of MB, which a text or tree encoding would copy several times over.
#include <string>

#include "moe/golden/golden_file.hpp"
#include "moe/shrink/shrink.hpp"

namespace moe::shrink::wire {

std::string encode_case(const golden::GoldenCase& c);
// Throws std::runtime_error when `bytes` is not what encode_case wrote.
golden::GoldenCase decode_case(const std::string& bytes);

std::string encode_verdict(const Verdict& v);
Verdict decode_verdict(const std::string& bytes);

}  // namespace moe::shrink::wire
