#pragma once
// Storage-rounding cases (spec/tolerance.md, "Zero tolerance"): exact cases whose intermediates
// are NOT all values of a narrow storage type M, built so that every correct way of keeping them
// gives one output in the data type T. A backend that computes in f32 forms each intermediate
// exactly (the exactness certificate, with rounded = true) and then keeps it, or rounds it to M
// to nearest, ties to even; the cases make every such choice round to the same output in T,
// while a conversion that truncates moves some intermediate by a whole step of M and the output
// with it. So a backend declaring storage M gets zero tolerance there, and truncation fails.
#include <map>
#include <optional>
#include <string>

#include "moe/spec/problem.hpp"
#include "moe/spec/tensor.hpp"

namespace moe::reference {

// How many stage values (the case's /stages, or the reference's) are not values of `storage`
// (NaN aside): the values a storage-rounding case tests.
std::size_t values_storage_lacks(const std::map<std::string, Tensor>& stages, DType storage);

// Why a backend that keeps this exact case's intermediates (`stages`: the reference's) in
// `storage` could return something other than the reference rounded to the data type, or
// nothing when it cannot. It cannot when
//  1. no token has two slots whose pairs hold values `storage` lacks: a backend keeps or rounds
//     one pair's stage as a whole (one buffer), so each output element then sees one choice per
//     stage, whatever the backend chose for other pairs; and
//  2. every reading, the op with any set of its stages rounded to `storage` (reference::Options::
//     rounded_stages), rounds to the data type as the exact output does, element by element.
// The case must be certified exact with rounded storage (certify_exact), so that a backend's f32
// arithmetic after a rounded stage is exact too.
std::optional<std::string> storage_rounding_shows(const Problem& p, const std::map<std::string, Tensor>& stages,
                                                  DType storage, int threads);

}  // namespace moe::reference
