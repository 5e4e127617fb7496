#pragma once
// The grid the backends' conformance tests walk: both expert types and both conventions, with the
// data types and token counts a test picks, at H = 37, I = 21, E = 6, K = 2 (no dimension a
// multiple of any tile size); each problem's parameters captured for doctest's messages.
#include <doctest/doctest.h>

#include <cstddef>
#include <initializer_list>

#include "small_cases.hpp"

namespace moe::test {

// f(problem, data type, T) for every point of the grid.
template <class F>
void for_each_small_problem(std::initializer_list<DType> dtypes, std::initializer_list<std::size_t> tokens, F&& f) {
    for (auto type : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu})
        for (auto conv : {Convention::spec, Convention::openvino})
            for (DType dtype : dtypes)
                for (std::size_t T : tokens) {
                    CAPTURE(expert_type_name(type));
                    CAPTURE(convention_name(conv));
                    CAPTURE(dtype_name(dtype));
                    CAPTURE(T);
                    f(small_problem(type, conv, T, 37, 21, 6, 2, dtype), dtype, T);
                }
}

}  // namespace moe::test
