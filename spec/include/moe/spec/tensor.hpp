#pragma once
// A dense row-major tensor that keeps the element type it was given in. The operation's inputs
// live in this form so that a backend sees exactly the bits a golden file stores. 4-bit types are
// packed two per byte, element 2i in the low nibble of byte i (the layout OpenVINO's kernels take).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "moe/spec/dtype.hpp"

namespace moe {

using Shape = std::vector<std::size_t>;

std::string shape_to_string(const Shape& s);  // "[2, 3, 4]"

// Number of elements; throws InputError naming `what` if the product overflows size_t.
std::size_t element_count(const Shape& s, const std::string& what = "tensor");

// std::allocator whose construct() without arguments default-initialises (leaves bytes as they
// are): a vector of it grows without writing zeros first (Tensor::uninitialised).
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
    using value_type = T;
    template <class U>
    struct rebind {
        using other = DefaultInitAllocator<U>;
    };
    DefaultInitAllocator() = default;
    template <class U>
    DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
    template <class U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};

class Tensor {
public:
    Tensor() = default;
    Tensor(DType dtype, Shape shape);  // zero-filled
    // Storage allocated and not written: for a result every byte of which is written before it
    // is read (a device backend's output, read back into it), where zero-filling tens of MB
    // would cost more host time than the copy that overwrites them.
    static Tensor uninitialised(DType dtype, Shape shape);
    // Takes `shape`, of at most as many elements, keeping the first ones in place (no copy): a
    // buffer allocated with room past its end (a guard a plugin must not write) becomes the
    // result itself. Throws std::logic_error for a larger shape.
    void shrink_to(Shape shape);

    DType dtype() const { return dtype_; }
    const Shape& shape() const { return shape_; }
    std::size_t rank() const { return shape_.size(); }
    std::size_t size() const { return count_; }
    std::size_t nbytes() const { return bytes_.size(); }  // storage_bytes(dtype, size)
    const unsigned char* data() const { return bytes_.data(); }
    unsigned char* data() { return bytes_.data(); }

    // Element `flat` (row-major) widened exactly to f64 (integers too).
    double get(std::size_t flat) const;
    // Stores v rounded to the element type (ties to even; the 8- and 4-bit float types saturate,
    // see dtype.hpp); integer types require an integral v within their range (InputError).
    void set(std::size_t flat, double v);
    // Element `flat`'s code, for types of at most 8 bits: an integer's two's-complement byte (i4
    // sign-extended to 8 bits), a float type's bit pattern.
    std::uint8_t code(std::size_t flat) const;
    // One byte per element (code() of each), as golden files and numpy hold these types.
    std::vector<std::uint8_t> element_bytes() const;
    // The inverse: one byte per element. Throws InputError naming the first element outside the
    // type's range (u4 or f4e2m1 above 15, i4 outside [-8, 7]).
    void set_element_bytes(const std::uint8_t* bytes);
    // Integer element, for index tensors (i32 or i64 only).
    std::int64_t get_index(std::size_t flat) const;
    void set_index(std::size_t flat, std::int64_t v);

    // All elements widened to f64, row-major.
    std::vector<double> to_f64() const;
    // Elements [begin, begin + count) widened to f64 into out (one type dispatch per call).
    void to_f64(std::size_t begin, std::size_t count, double* out) const;
    // Stores values[0, count) at [begin, begin + count), rounded (one type dispatch per call).
    void set_range(std::size_t begin, std::size_t count, const double* values);
    // A tensor of type `dtype` holding `values` rounded to it.
    static Tensor from_f64(DType dtype, Shape shape, const std::vector<double>& values);

    bool operator==(const Tensor& o) const {
        return dtype_ == o.dtype_ && shape_ == o.shape_ && bytes_ == o.bytes_;
    }

private:
    DType dtype_ = DType::f64;
    Shape shape_;
    std::size_t count_ = 0;
    std::vector<unsigned char, DefaultInitAllocator<unsigned char>> bytes_;
};

}  // namespace moe
