#include "moe/shrink/candidate_limit.hpp"

#include <algorithm>

namespace moe::shrink {

double default_candidate_seconds(double original_seconds, double max_seconds) {
    const double wanted = std::max(kMinCandidateSeconds, kCandidateSlowdown * original_seconds);
    return std::min(wanted, std::max(kMinCandidateSeconds, max_seconds));
}

}  // namespace moe::shrink
