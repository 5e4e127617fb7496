#pragma once
// Delta debugging (Zeller and Hildebrandt, "Simplifying and Isolating Failure-Inducing Input",
// 2002), in the form a shrinker needs: remove as many items as possible while `still_fails`
// holds, trying chunks of halving size, so that a failure that needs few items gets there in
// O(log n) tests and a failure that needs many in O(n log n).
#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

namespace moe::shrink {

// `items` minus the chunks whose removal keeps `still_fails(kept)` true, keeping at least
// `min_keep` items. `exhausted()` (when given) is asked before every candidate and ends the search
// when the budget is spent: on a large tensor the remaining candidates alone (n of them at the
// finest level, each a copy of n items) would take hours, even if each were refused at once.
inline std::vector<std::size_t> ddmin(std::vector<std::size_t> items,
                                      const std::function<bool(const std::vector<std::size_t>&)>& still_fails,
                                      std::size_t min_keep = 1, const std::function<bool()>& exhausted = {}) {
    std::size_t chunks = 2;
    while (items.size() > min_keep) {
        const std::size_t n = items.size(), size = (n + chunks - 1) / chunks;
        bool removed = false;
        for (std::size_t start = 0; start < n; start += size) {
            if (exhausted && exhausted()) return items;
            const std::size_t stop = std::min(n, start + size);
            if (n - (stop - start) < min_keep) continue;
            std::vector<std::size_t> kept(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(start));
            kept.insert(kept.end(), items.begin() + static_cast<std::ptrdiff_t>(stop), items.end());
            if (still_fails(kept)) {
                items = std::move(kept);
                chunks = std::max<std::size_t>(chunks - 1, 2);
                removed = true;
                break;
            }
        }
        if (removed) continue;
        if (size <= 1) break;
        chunks = std::min(n, chunks * 2);
    }
    return items;
}

}  // namespace moe::shrink
