#pragma once
// Zero tolerance for backends that store intermediates in a narrow type. An exact-by-construction
// case certifies that every sum fits an f32 significand; when, in addition, every intermediate a
// backend stores between stages (gate_up or gate and up, act, down: the case's /stages) is a value
// of the backend's storage type, storing it loses nothing either, and the only rounding left is the
// output's conversion to the data type, which must then be to nearest, ties to even.
// A storage-rounding case (moe/reference/storage_rounding.hpp) extends this to intermediates the
// storage type lacks, where every correct rounding of them gives the same output in the data type.
#include <map>
#include <optional>
#include <string>

#include "moe/golden/golden_file.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::conformance {

// The first stage element that `storage` cannot hold exactly ("act[2, 0, 5] = 0.30000001"), or
// nothing when every element is a value of `storage`.
std::optional<std::string> first_inexact_intermediate(const std::map<std::string, Tensor>& stages, DType storage);

// Whether every intermediate of the case is a value of `storage`: true at once for storage of
// f32's 24 significand bits or more (the exactness certificate covers them); otherwise checked on
// the file's /stages, or on the reference's stages for a file without them.
bool intermediates_exact_in(const golden::GoldenCase& c, DType storage, int threads);

// Whether a backend that stores the case's intermediates in `storage` and returns an output of
// type `output` loses nothing to its storage: every intermediate is a value of `storage`, or the
// output is in the data type and the case is a storage-rounding case for `storage` (no token
// mixes slots the type lacks values of, and every reading with stages rounded to `storage` rounds
// to the data type as the op does). An output of a wider type holds the readings themselves,
// which differ: the ordinary bound judges it.
bool storage_loses_nothing(const golden::GoldenCase& c, DType storage, DType output, int threads);

}  // namespace moe::conformance
