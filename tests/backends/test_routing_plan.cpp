// The routing step (mask_gen) against hand-made cases.
#include <doctest/doctest.h>

#include "moe/backends/routing_plan.hpp"

using namespace moe;
using moe::backends::make_routing_plan;

TEST_CASE("counts, offsets and stable token order, with an empty expert") {
    // 4 tokens, K = 2, E = 4. Expert 2 receives no token.
    const Tensor idx = Tensor::from_f64(DType::i32, {4, 2}, {3, 0, 0, 1, 1, 3, 0, 3});
    const auto p = make_routing_plan(idx, 4);
    CHECK(p.counts == std::vector<std::size_t>{3, 2, 0, 3});
    CHECK(p.offsets == std::vector<std::size_t>{0, 3, 5, 5, 8});
    CHECK(p.used == std::vector<std::size_t>{0, 1, 3});
    // Expert 0: tokens 0 (slot 1), 1 (slot 0), 3 (slot 0); expert 1: 1 (1), 2 (0); expert 3: 0 (0), 2 (1), 3 (1).
    CHECK(p.token == std::vector<std::uint32_t>{0, 1, 3, 1, 2, 0, 2, 3});
    CHECK(p.slot == std::vector<std::uint32_t>{1, 0, 0, 1, 0, 0, 1, 1});
    for (std::size_t i = 0; i < 8; ++i) {
        const std::size_t at = p.position[i];
        CHECK(p.token[at] == i / 2);
        CHECK(p.slot[at] == i % 2);
    }
}

TEST_CASE("one expert takes every token; i64 indices; rank-3 indices") {
    const Tensor idx = Tensor::from_f64(DType::i64, {1, 3, 2}, {2, 0, 1, 2, 2, 1});
    const auto p = make_routing_plan(idx, 3);
    CHECK(p.tokens == 3);
    CHECK(p.counts == std::vector<std::size_t>{1, 2, 3});
    CHECK(p.offsets[2] == 3);
    CHECK(std::vector<std::uint32_t>(p.token.begin() + 3, p.token.end()) == std::vector<std::uint32_t>{0, 1, 2});
    CHECK(std::vector<std::uint32_t>(p.slot.begin() + 3, p.slot.end()) == std::vector<std::uint32_t>{0, 1, 0});
}

TEST_CASE("no tokens") {
    const auto p = make_routing_plan(Tensor(DType::i32, {0, 2}), 5);
    CHECK(p.tokens == 0);
    CHECK(p.used.empty());
    CHECK(p.offsets == std::vector<std::size_t>(6, 0));
}
