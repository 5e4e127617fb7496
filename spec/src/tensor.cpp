#include "moe/spec/tensor.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "moe/spec/error.hpp"

namespace moe {

std::string shape_to_string(const Shape& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i) out += ", ";
        out += std::to_string(s[i]);
    }
    return out + "]";
}

std::size_t element_count(const Shape& s, const std::string& what) {
    std::size_t n = 1;
    for (std::size_t d : s) {
        if (d != 0 && n > std::numeric_limits<std::size_t>::max() / d)
            throw InputError(what + ": shape " + shape_to_string(s) +
                             " has more elements than can be addressed");
        n *= d;
    }
    return n;
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
    count_ = element_count(shape_);
    if (count_ > std::numeric_limits<std::size_t>::max() / dtype_size(dtype_))
        throw InputError("tensor of shape " + shape_to_string(shape_) + " is too large");
    bytes_.assign(count_ * dtype_size(dtype_), 0);
}

namespace {
template <class T>
T load(const unsigned char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
template <class T>
void store(unsigned char* p, T v) {
    std::memcpy(p, &v, sizeof v);
}
}  // namespace

double Tensor::get(std::size_t flat) const {
    const unsigned char* p = bytes_.data() + flat * dtype_size(dtype_);
    switch (dtype_) {
        case DType::f64: return load<double>(p);
        case DType::f32: return static_cast<double>(load<float>(p));
        case DType::f16: return f16_bits_to_f64(load<std::uint16_t>(p));
        case DType::bf16: return bf16_bits_to_f64(load<std::uint16_t>(p));
        case DType::i32: return static_cast<double>(load<std::int32_t>(p));
        case DType::i64: return static_cast<double>(load<std::int64_t>(p));
    }
    return 0.0;
}

void Tensor::set(std::size_t flat, double v) {
    unsigned char* p = bytes_.data() + flat * dtype_size(dtype_);
    switch (dtype_) {
        case DType::f64: store(p, v); return;
        case DType::f32: store(p, static_cast<float>(v)); return;
        case DType::f16: store(p, f64_to_f16_bits(v)); return;
        case DType::bf16: store(p, f64_to_bf16_bits(v)); return;
        case DType::i32:
        case DType::i64:
            if (!(std::trunc(v) == v)) throw std::invalid_argument("non-integral value for an index tensor");
            set_index(flat, static_cast<std::int64_t>(v));
            return;
    }
}

std::int64_t Tensor::get_index(std::size_t flat) const {
    const unsigned char* p = bytes_.data() + flat * dtype_size(dtype_);
    if (dtype_ == DType::i32) return load<std::int32_t>(p);
    if (dtype_ == DType::i64) return load<std::int64_t>(p);
    throw std::logic_error("get_index on a floating tensor");
}

void Tensor::set_index(std::size_t flat, std::int64_t v) {
    unsigned char* p = bytes_.data() + flat * dtype_size(dtype_);
    if (dtype_ == DType::i32) store(p, static_cast<std::int32_t>(v));
    else if (dtype_ == DType::i64) store(p, v);
    else throw std::logic_error("set_index on a floating tensor");
}

std::vector<double> Tensor::to_f64() const {
    std::vector<double> out(count_);
    to_f64(0, count_, out.data());
    return out;
}

namespace {
template <class T, class Widen>
void widen_range(const unsigned char* p, std::size_t count, double* out, Widen widen) {
    for (std::size_t i = 0; i < count; ++i) out[i] = widen(load<T>(p + i * sizeof(T)));
}
}  // namespace

void Tensor::to_f64(std::size_t begin, std::size_t count, double* out) const {
    const unsigned char* p = bytes_.data() + begin * dtype_size(dtype_);
    auto cast = [](auto v) { return static_cast<double>(v); };
    switch (dtype_) {
        case DType::f64: widen_range<double>(p, count, out, cast); return;
        case DType::f32: widen_range<float>(p, count, out, cast); return;
        case DType::f16: widen_range<std::uint16_t>(p, count, out, f16_bits_to_f64); return;
        case DType::bf16: widen_range<std::uint16_t>(p, count, out, bf16_bits_to_f64); return;
        case DType::i32: widen_range<std::int32_t>(p, count, out, cast); return;
        case DType::i64: widen_range<std::int64_t>(p, count, out, cast); return;
    }
}

namespace {
template <class T, class Narrow>
void narrow_range(unsigned char* p, std::size_t count, const double* in, Narrow narrow) {
    for (std::size_t i = 0; i < count; ++i) store<T>(p + i * sizeof(T), narrow(in[i]));
}
}  // namespace

void Tensor::set_range(std::size_t begin, std::size_t count, const double* values) {
    unsigned char* p = bytes_.data() + begin * dtype_size(dtype_);
    switch (dtype_) {
        case DType::f64: std::memcpy(p, values, count * sizeof(double)); return;
        case DType::f32: narrow_range<float>(p, count, values, [](double v) { return static_cast<float>(v); }); return;
        case DType::f16: narrow_range<std::uint16_t>(p, count, values, f64_to_f16_bits); return;
        case DType::bf16: narrow_range<std::uint16_t>(p, count, values, f64_to_bf16_bits); return;
        case DType::i32:
        case DType::i64:
            for (std::size_t i = 0; i < count; ++i) set(begin + i, values[i]);
            return;
    }
}

Tensor Tensor::from_f64(DType dtype, Shape shape, const std::vector<double>& values) {
    Tensor t(dtype, std::move(shape));
    if (values.size() != t.size())
        throw std::invalid_argument("from_f64: " + std::to_string(values.size()) +
                                    " values for shape " + shape_to_string(t.shape()));
    t.set_range(0, values.size(), values.data());
    return t;
}

}  // namespace moe
