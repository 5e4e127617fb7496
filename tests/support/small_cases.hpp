#pragma once
// Small problems for tests, made with the generator so that every shape rule holds.
#include "moe/generator/case_spec.hpp"
#include "moe/generator/synthesize.hpp"

namespace moe::test {

inline generator::CaseSpec small_spec(ExpertType type, Convention conv, std::size_t T = 5, std::size_t H = 12,
                                      std::size_t I = 6, std::size_t E = 4, std::size_t K = 2,
                                      DType dtype = DType::f32) {
    generator::CaseSpec c;
    c.name = "small";
    c.attributes = attributes_for(type, conv, 1.702, 0.9);
    c.seq = T;
    c.hidden = H;
    c.inter = I;
    c.experts = E;
    c.topk = K;
    c.dtype = dtype;
    c.seed = 1234;
    return c;
}

inline Problem small_problem(ExpertType type, Convention conv, std::size_t T = 5, std::size_t H = 12,
                             std::size_t I = 6, std::size_t E = 4, std::size_t K = 2, DType dtype = DType::f32) {
    return generator::synthesize(small_spec(type, conv, T, H, I, E, K, dtype));
}

}  // namespace moe::test
