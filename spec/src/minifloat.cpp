// The OCP 8-bit and 4-bit float codes (OCP 8-bit Floating Point Specification, 2023; OCP
// Microscaling Formats (MX) v1.0, 2023): E4M3, E5M2, E2M1 and the E8M0 scale. Value tables and
// the evidence are in spec/compressed.md. Decoding is exact; encoding rounds to nearest, ties to
// even, saturating (the conversion the quantisers of real checkpoints use).
#include <cmath>
#include <limits>
#include <string>

#include "moe/spec/dtype.hpp"
#include "moe/spec/error.hpp"
#include "rounding.hpp"

namespace moe {

namespace {

// A small binary float: `ebits` exponent bits with bias `bias`, `mbits` mantissa bits, a sign
// bit above them; exponent field 0 holds the subnormals.
struct Format {
    int ebits, mbits, bias;
    double max_finite;
    int emin() const { return 1 - bias; }
};

constexpr Format kE4M3{4, 3, 7, 448.0};
constexpr Format kE5M2{5, 2, 15, 57344.0};
constexpr Format kE2M1{2, 1, 1, 6.0};

double decode(const Format& f, unsigned code) {
    const unsigned sign = (code >> (f.ebits + f.mbits)) & 1u;
    const int exp = static_cast<int>((code >> f.mbits) & ((1u << f.ebits) - 1u));
    const int mant = static_cast<int>(code & ((1u << f.mbits) - 1u));
    const double v = exp == 0 ? std::ldexp(static_cast<double>(mant), f.emin() - f.mbits)
                              : std::ldexp(static_cast<double>(mant + (1 << f.mbits)), exp - f.bias - f.mbits);
    return sign ? -v : v;
}

// |v| rounded into the format (saturating), as its code without the sign.
unsigned encode_magnitude(const Format& f, double a) {
    double r = detail::round_binary(a, f.mbits, f.emin(), f.max_finite);
    if (std::isinf(r)) r = f.max_finite;
    if (r == 0.0) return 0;
    const double min_normal = std::ldexp(1.0, f.emin());
    if (r < min_normal) return static_cast<unsigned>(std::ldexp(r, f.mbits - f.emin()));
    const int exp = std::ilogb(r);
    const auto mant = static_cast<unsigned>(std::ldexp(r, f.mbits - exp)) - (1u << f.mbits);
    return (static_cast<unsigned>(exp + f.bias) << f.mbits) | mant;
}

unsigned sign_bit(const Format& f, double v) { return std::signbit(v) ? 1u << (f.ebits + f.mbits) : 0u; }

}  // namespace

double f8e4m3_to_f64(std::uint8_t code) {
    if ((code & 0x7f) == 0x7f) return std::numeric_limits<double>::quiet_NaN();
    return decode(kE4M3, code);
}

double f8e5m2_to_f64(std::uint8_t code) {
    if ((code & 0x7c) == 0x7c) {
        if ((code & 0x03) != 0) return std::numeric_limits<double>::quiet_NaN();
        return (code & 0x80) ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    }
    return decode(kE5M2, code);
}

double f4e2m1_to_f64(std::uint8_t code) { return decode(kE2M1, code & 0x0fu); }

double f8e8m0_to_f64(std::uint8_t code) {
    if (code == 0xff) return std::numeric_limits<double>::quiet_NaN();
    return std::ldexp(1.0, static_cast<int>(code) - 127);
}

// A NaN keeps its sign: both S.1111.111 codes are NaN (E4M3), and S.11111.1x (E5M2).
std::uint8_t f64_to_f8e4m3(double v) {
    if (std::isnan(v)) return std::signbit(v) ? 0xff : 0x7f;
    return static_cast<std::uint8_t>(sign_bit(kE4M3, v) | encode_magnitude(kE4M3, std::fabs(v)));
}

std::uint8_t f64_to_f8e5m2(double v) {
    if (std::isnan(v)) return std::signbit(v) ? 0xfe : 0x7e;
    if (std::isinf(v)) return v > 0 ? 0x7c : 0xfc;
    return static_cast<std::uint8_t>(sign_bit(kE5M2, v) | encode_magnitude(kE5M2, std::fabs(v)));
}

std::uint8_t f64_to_f4e2m1(double v) {
    if (std::isnan(v)) throw InputError("f4e2m1 has no NaN");
    return static_cast<std::uint8_t>(sign_bit(kE2M1, v) | encode_magnitude(kE2M1, std::fabs(v)));
}

std::uint8_t f64_to_f8e8m0(double v) {
    if (std::isnan(v)) return 0xff;
    int e;
    const double m = std::frexp(v, &e);  // v = m 2^e, m in [0.5, 1)
    if (!(v > 0.0) || m != 0.5 || e - 1 < -127 || e - 1 > 127)
        throw InputError("f8e8m0 holds the powers of two 2^-127 .. 2^127 only, not " + std::to_string(v));
    return static_cast<std::uint8_t>(e - 1 + 127);
}

}  // namespace moe
