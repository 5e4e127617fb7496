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

namespace {

// The index of the element at row-major position flat of shape s, as "[2, 0, 7]".
std::string index_to_string(const Shape& s, std::size_t flat) {
    Shape index(s.size());
    for (std::size_t d = s.size(); d-- > 0;) {
        index[d] = s[d] ? flat % s[d] : 0;
        flat = s[d] ? flat / s[d] : 0;
    }
    return shape_to_string(index);
}

}  // namespace

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
    bytes_.assign(storage_bytes(dtype_, count_), 0);
}

Tensor Tensor::uninitialised(DType dtype, Shape shape) {
    Tensor t;
    t.dtype_ = dtype;
    t.shape_ = std::move(shape);
    t.count_ = element_count(t.shape_);
    if (t.count_ > std::numeric_limits<std::size_t>::max() / dtype_size(dtype))
        throw InputError("tensor of shape " + shape_to_string(t.shape_) + " is too large");
    t.bytes_.resize(storage_bytes(dtype, t.count_));  // default-initialised: not written
    return t;
}

void Tensor::shrink_to(Shape shape) {
    const std::size_t count = element_count(shape);
    if (count > count_) throw std::logic_error("Tensor::shrink_to: " + shape_to_string(shape) + " is larger than " +
                                               shape_to_string(shape_));
    shape_ = std::move(shape);
    count_ = count;
    bytes_.resize(storage_bytes(dtype_, count));
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

bool is_nibble_type(DType t) { return dtype_bits(t) == 4; }

// The value of one code of an 8- or 4-bit type.
double code_value(DType t, std::uint8_t c) {
    switch (t) {
        case DType::u8: case DType::u4: return static_cast<double>(c);
        case DType::i8: case DType::i4: return static_cast<double>(static_cast<std::int8_t>(c));
        case DType::f4e2m1: return f4e2m1_to_f64(c);
        case DType::f8e4m3: return f8e4m3_to_f64(c);
        case DType::f8e5m2: return f8e5m2_to_f64(c);
        case DType::f8e8m0: return f8e8m0_to_f64(c);
        default: throw std::logic_error("code_value of a wide type");
    }
}

std::string fmt_value(double v) {
    if (std::trunc(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
    return std::to_string(v);
}

// The code that stores v in an 8- or 4-bit type.
std::uint8_t value_code(DType t, double v) {
    if (is_integer_weight(t)) {
        if (!(std::trunc(v) == v) || v < static_cast<double>(integer_min(t)) || v > static_cast<double>(integer_max(t)))
            throw InputError("value " + fmt_value(v) + " is not an integer in " + std::string(dtype_name(t)) +
                             "'s range [" + std::to_string(integer_min(t)) + ", " + std::to_string(integer_max(t)) +
                             "]");
        return static_cast<std::uint8_t>(static_cast<std::int8_t>(static_cast<int>(v)) & (is_nibble_type(t) ? 0x0f : 0xff));
    }
    switch (t) {
        case DType::f4e2m1: return f64_to_f4e2m1(v);
        case DType::f8e4m3: return f64_to_f8e4m3(v);
        case DType::f8e5m2: return f64_to_f8e5m2(v);
        case DType::f8e8m0: return f64_to_f8e8m0(v);
        default: throw std::logic_error("value_code of a wide type");
    }
}
}  // namespace

std::uint8_t Tensor::code(std::size_t flat) const {
    if (!is_nibble_type(dtype_)) {
        if (dtype_bits(dtype_) != 8) throw std::logic_error("code() of a type wider than 8 bits");
        return bytes_[flat];
    }
    const std::uint8_t nibble = (flat % 2 ? bytes_[flat / 2] >> 4 : bytes_[flat / 2]) & 0x0f;
    // i4 sign-extended, so that the code is the int8 of the value.
    return dtype_ == DType::i4 && (nibble & 0x08) ? static_cast<std::uint8_t>(nibble | 0xf0) : nibble;
}

std::vector<std::uint8_t> Tensor::element_bytes() const {
    std::vector<std::uint8_t> out(count_);
    for (std::size_t i = 0; i < count_; ++i) out[i] = code(i);
    return out;
}

void Tensor::set_element_bytes(const std::uint8_t* in) {
    if (dtype_bits(dtype_) > 8) throw std::logic_error("set_element_bytes on a type wider than 8 bits");
    if (!is_nibble_type(dtype_)) {  // every byte is a valid u8, i8 or 8-bit float code
        std::memcpy(bytes_.data(), in, count_);
        return;
    }
    std::fill(bytes_.begin(), bytes_.end(), 0);
    for (std::size_t i = 0; i < count_; ++i) {
        const std::uint8_t c = in[i];
        const bool ok = dtype_ == DType::i4 ? (c <= 7 || c >= 0xf8) : c <= 15;
        if (!ok)
            throw InputError("element " + index_to_string(shape_, i) + " is " +
                             std::to_string(dtype_ == DType::i4 ? static_cast<int>(static_cast<std::int8_t>(c)) : c) +
                             ", outside " + std::string(dtype_name(dtype_)) + "'s range " +
                             (dtype_ == DType::i4 ? "[-8, 7]" : "[0, 15]"));
        bytes_[i / 2] |= static_cast<std::uint8_t>((c & 0x0f) << (i % 2 ? 4 : 0));
    }
}

double Tensor::get(std::size_t flat) const {
    if (dtype_bits(dtype_) <= 8) return code_value(dtype_, code(flat));
    const unsigned char* p = bytes_.data() + flat * dtype_size(dtype_);
    switch (dtype_) {
        case DType::f64: return load<double>(p);
        case DType::f32: return static_cast<double>(load<float>(p));
        case DType::f16: return f16_bits_to_f64(load<std::uint16_t>(p));
        case DType::bf16: return bf16_bits_to_f64(load<std::uint16_t>(p));
        case DType::i32: return static_cast<double>(load<std::int32_t>(p));
        case DType::i64: return static_cast<double>(load<std::int64_t>(p));
        default: break;
    }
    return 0.0;
}

void Tensor::set(std::size_t flat, double v) {
    if (is_nibble_type(dtype_)) {
        const std::uint8_t c = value_code(dtype_, v) & 0x0f;
        unsigned char& byte = bytes_[flat / 2];
        byte = flat % 2 ? static_cast<unsigned char>((byte & 0x0f) | (c << 4)) : static_cast<unsigned char>((byte & 0xf0) | c);
        return;
    }
    if (dtype_bits(dtype_) == 8) {
        bytes_[flat] = value_code(dtype_, v);
        return;
    }
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
        default: return;
    }
}

std::int64_t Tensor::get_index(std::size_t flat) const {
    const unsigned char* p = bytes_.data() + flat * dtype_size(dtype_);
    if (dtype_ == DType::i32) return load<std::int32_t>(p);
    if (dtype_ == DType::i64) return load<std::int64_t>(p);
    throw std::logic_error("get_index on a tensor that is not i32 or i64");
}

void Tensor::set_index(std::size_t flat, std::int64_t v) {
    unsigned char* p = bytes_.data() + flat * dtype_size(dtype_);
    if (dtype_ == DType::i32) store(p, static_cast<std::int32_t>(v));
    else if (dtype_ == DType::i64) store(p, v);
    else throw std::logic_error("set_index on a tensor that is not i32 or i64");
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
    if (dtype_bits(dtype_) <= 8) {
        for (std::size_t i = 0; i < count; ++i) out[i] = get(begin + i);
        return;
    }
    const unsigned char* p = bytes_.data() + begin * dtype_size(dtype_);
    auto cast = [](auto v) { return static_cast<double>(v); };
    switch (dtype_) {
        case DType::f64: widen_range<double>(p, count, out, cast); return;
        case DType::f32: widen_range<float>(p, count, out, cast); return;
        case DType::f16: widen_range<std::uint16_t>(p, count, out, f16_bits_to_f64); return;
        case DType::bf16: widen_range<std::uint16_t>(p, count, out, bf16_bits_to_f64); return;
        case DType::i32: widen_range<std::int32_t>(p, count, out, cast); return;
        case DType::i64: widen_range<std::int64_t>(p, count, out, cast); return;
        default: return;
    }
}

namespace {
template <class T, class Narrow>
void narrow_range(unsigned char* p, std::size_t count, const double* in, Narrow narrow) {
    for (std::size_t i = 0; i < count; ++i) store<T>(p + i * sizeof(T), narrow(in[i]));
}
}  // namespace

void Tensor::set_range(std::size_t begin, std::size_t count, const double* values) {
    if (dtype_bits(dtype_) <= 8 || dtype_ == DType::i32 || dtype_ == DType::i64) {
        for (std::size_t i = 0; i < count; ++i) set(begin + i, values[i]);
        return;
    }
    unsigned char* p = bytes_.data() + begin * dtype_size(dtype_);
    switch (dtype_) {
        case DType::f64: std::memcpy(p, values, count * sizeof(double)); return;
        case DType::f32: narrow_range<float>(p, count, values, [](double v) { return static_cast<float>(v); }); return;
        case DType::f16: narrow_range<std::uint16_t>(p, count, values, f64_to_f16_bits); return;
        case DType::bf16: narrow_range<std::uint16_t>(p, count, values, f64_to_bf16_bits); return;
        default: return;
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
