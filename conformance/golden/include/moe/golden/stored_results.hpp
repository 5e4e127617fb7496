#pragma once
// Whether the results a golden file stores belong to its inputs. A file can be a valid HDF5 file
// with valid checksums and still carry results that are not the reference's: negative error
// bounds fail correct backends, bounds scaled up by 1e300 pass every backend, and a zeroed output
// blames the backend for a damaged file, and a false `exact` claim gives correct backends a
// tolerance of zero. So before a case is run:
//   - a case that claims `exact` passes the exactness certificate (moe/reference/exactness.hpp);
//   - every /outputs/bound_* element is >= 0 (all elements);
//   - /outputs/output and every /outputs/bound_* agree with the reference recomputed from the
//     inputs on a sample of tokens: every token when the case has at most `max_tokens`, else
//     `max_tokens` tokens spread evenly over the case (first and last included), plus every
//     token where a stored bound is not finite (the reference's own bounds are +Inf or NaN only
//     where the data holds Inf or NaN; anywhere else a non-finite bound would pass anything).
// Agreement: the same class (finite, NaN, +Inf, -Inf) and, for finite values, a difference of at
// most kRelativeTolerance times the element's magnitude (the value plus its error terms): far
// below any backend's tolerance, far above the reference's own run-to-run differences (none).
#include <cstddef>
#include <filesystem>

#include "moe/golden/golden_file.hpp"

namespace moe::golden {

inline constexpr double kRelativeTolerance = 1e-9;

struct StoredResultsOptions {
    std::size_t max_tokens = 256;
    int threads = 1;
};

// `c` must hold a validated problem (moe::validate). Throws FileError naming `file`, the dataset
// and the element: malformed for a negative bound, a bound of the wrong shape or a false `exact`,
// corrupt for a disagreement with the recomputation. Returns the number of tokens recomputed.
// `c` is unchanged on return (its weights are lent to the recomputation, then given back).
std::size_t check_stored_results(const std::filesystem::path& file, GoldenCase& c,
                                 const StoredResultsOptions& options = {});

}  // namespace moe::golden
