#pragma once
// The two execution modes, called by run() after validation.
#include "moe/reference/interpreter.hpp"

namespace moe::reference::detail {

Result run_sparse(const Problem& p, const Dims& d, const ResolvedParams& rp, const Options& o);
Result run_dense(const Problem& p, const Dims& d, const ResolvedParams& rp, const Options& o);

}  // namespace moe::reference::detail
