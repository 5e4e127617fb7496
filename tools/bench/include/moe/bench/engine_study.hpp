#pragma once
// moe-bench --engine-study: why the cpu backend reads prepared weights through the library at
// every row count. One expert's GEMM, one thread, weights cold (a different expert each call,
// more experts than the caches hold), for M = 1..64 rows: the engine on the weights as the op
// stores them (our AVX-512 kernels up to 8 rows, the library above) against the library on the
// weights packed once into its blocked layout.
#include <cstddef>
#include <string>

namespace moe::bench {

void engine_study(const std::string& shape, std::size_t n, std::size_t k);

}  // namespace moe::bench
