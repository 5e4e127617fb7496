#pragma once
// A golden case and a verdict as bytes, for the worker process of an isolated shrink
// (oracle_worker.hpp): a candidate is made after the worker started, so it can only reach the
// worker down its socket, and the verdict comes back the same way. Plain binary (lengths, then
// the tensors' bytes as they are): the first candidates of a model-sized case are hundreds of MB,
// which a text or tree encoding would copy several times over.
//
// Every field of GoldenCase, Problem and OpAttributes crosses: a field added there must be added
// here, or the worker judges a case that lacks it.
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
