// The opencl backend's staged transfers (host_transfer.cpp, through the anchor moe-bench
// --transfer-study times): every byte arrives and comes back for any plan, including chunks that
// do not divide the size, more threads than chunks, one thread, and sizes below one chunk.
#include <doctest/doctest.h>

#include <cstddef>
#include <utility>

#include "moe/backends/opencl_backend.hpp"
#include "moe/backends/opencl_transfer_anchor.hpp"

using moe::backends::OpenclBackend;
using moe::backends::OpenclTransferAnchor;

TEST_CASE("opencl staged transfers: every byte in and back, for any threads x chunk") {
    REQUIRE_MESSAGE(OpenclBackend().availability().available, OpenclBackend().availability().reason);
    for (std::size_t bytes : {std::size_t(1), std::size_t(4095), std::size_t(3 * 4096 + 7), std::size_t(5 << 20) + 13}) {
        OpenclTransferAnchor a("", bytes);
        for (const auto& [threads, chunk] : {std::pair<unsigned, std::size_t>{1, 4096}, {3, 4096}, {2, 1 << 20},
                                             {64, 4096}, {8, 1 << 20}, {16, 256 << 10}}) {
            CAPTURE(bytes);
            CAPTURE(threads);
            CAPTURE(chunk);
            CHECK(a.staged_round_trip(threads, chunk));
        }
        CHECK(a.staged_round_trip(0, 0));  // the backend's own plan
    }
}
