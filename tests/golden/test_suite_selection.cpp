// Case selection by name (glob_match), the expectation file's "can never apply" check
// (glob_covers), and the shards (shard_files).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "moe/golden/suite.hpp"

using namespace moe::golden;

TEST_CASE("glob_match: '*' any run, '?' one character; a '*' in the pattern is a wildcard over a '*' in the name") {
    CHECK(glob_match("gemm2_*", "gemm2_medium"));
    CHECK(glob_match("gemm?_x", "gemm3_x"));
    CHECK_FALSE(glob_match("gemm?_x", "gemm_x"));
    CHECK(glob_match("*", ""));
    CHECK_FALSE(glob_match("a", "ab"));
    // A name holding '*': the pattern's '*' took it as a literal and could not back up.
    CHECK(glob_match("*b", "*ab"));
    CHECK(glob_match("a*", "a*"));
}

TEST_CASE("glob_covers: sufficient for 'every name the specific glob matches, the general one matches'") {
    CHECK(glob_covers("gemm2_*", "gemm2_medium"));
    CHECK(glob_covers("*", "gemm2_*"));
    CHECK(glob_covers("gemm2_*", "gemm2_?ias"));
    CHECK(glob_covers("a*", "a?"));
    CHECK_FALSE(glob_covers("a?", "a*"));          // a* matches "abc", a? does not
    CHECK_FALSE(glob_covers("topk_?", "topk_*"));
    CHECK_FALSE(glob_covers("a?c", "a*c"));        // a*c matches "abbc": a '*' inside, not only last
    CHECK_FALSE(glob_covers("gemm2_medium", "gemm2_*"));
    CHECK(glob_covers("x", "x"));
}

TEST_CASE("shard_files: disjoint shares that cover the files, none wrapping past 2^64") {
    const std::vector<std::string> files = {"e.h5", "a.h5", "d.h5", "b.h5", "c.h5"};
    std::vector<std::string> all;
    for (std::size_t i = 1; i <= 3; ++i)
        for (const auto& f : shard_files(files, i, 3)) all.push_back(f);
    CHECK(all == std::vector<std::string>{"a.h5", "d.h5", "b.h5", "e.h5", "c.h5"});
    CHECK(shard_files(files, 5, UINT64_MAX) == std::vector<std::string>{"e.h5"});
    CHECK(shard_files(files, 6, UINT64_MAX).empty());
}

// Sorted by file name, not path (docs/moe-conform.md, "Sharding"): a share is the same whatever
// folders the files sit in, so CI jobs whose copies of the files lie in differently named folders
// split them alike. Sorted by path, these three would have gone x/b, x/c, y/a.
TEST_CASE("shard_files: shares follow the file names, whatever folders hold them") {
    const std::vector<std::string> files = {"x/b.h5", "y/a.h5", "x/c.h5"};
    CHECK(shard_files(files, 1, 3) == std::vector<std::string>{"y/a.h5"});
    CHECK(shard_files(files, 2, 3) == std::vector<std::string>{"x/b.h5"});
    CHECK(shard_files(files, 3, 3) == std::vector<std::string>{"x/c.h5"});
    // One name in two folders: by path between them.
    CHECK(shard_files({"y/a.h5", "x/a.h5"}, 1, 2) == std::vector<std::string>{"x/a.h5"});
}
