#pragma once
// Certifies an exact-by-construction case: every value at every step of the computation is an
// integer multiple of a power-of-two quantum and small enough that all sums of products, in any
// order, fit in an f32 significand. Then any backend that accumulates in f32 (or wider) must
// produce the reference's output bit for bit, and the comparison tolerance can be zero.
#include <string>

#include "moe/spec/problem.hpp"

namespace moe::reference {

// Values on a grid: all multiples of `quantum` (a power of two) with |v| <= max_abs.
struct Grid {
    double quantum = 1.0;
    double max_abs = 0.0;
    double bits() const;  // log2(max_abs / quantum): significand bits any value on the grid needs
};

Grid grid_of(const Tensor& t);  // throws InputError for NaN or Inf

// Throws InputError naming the step that needs more than `significand_bits` bits (24 for f32);
// returns the largest number of bits any step needs. With a `storage` type narrower than f32, the
// values a backend stores between stages (gate_up or gate and up, act, down, biases included)
// must also be values of that type (its significand bits and its range), so that a backend that
// stores them there loses nothing: the case is then exact for it too, and the only rounding left
// is the output's conversion to the data type.
// With `rounded` (a storage-rounding case, storage_rounding.hpp) the stored values need not be
// values of `storage`: a backend rounds them there, to nearest, which keeps them on their grid
// and grows them by at most a factor (1 + u), so the steps after each stored value are certified
// for that larger magnitude; only the type's range is required.
double certify_exact(const Problem& p, int significand_bits = 24, DType storage = DType::f32, bool rounded = false);

}  // namespace moe::reference
