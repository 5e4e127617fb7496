// The kernels' element type codes (element_codes.hpp).
#include "element_codes.hpp"

#include <stdexcept>
#include <string>

#include "moe/spec/error.hpp"

namespace moe::backends::ocl {

std::int32_t elem_type(DType t) {
    switch (t) {
        case DType::f32: return 0;
        case DType::f16: return 1;
        case DType::bf16: return 2;
        case DType::f64: return 3;
        // Compressed weights, scales and zero points (kernels/gemm_compressed.cl).
        case DType::u8: return 10;
        case DType::i8: return 11;
        case DType::u4: return 12;
        case DType::i4: return 13;
        case DType::f4e2m1: return 14;
        case DType::f8e4m3: return 15;
        case DType::f8e5m2: return 16;
        case DType::f8e8m0: return 17;
        default: throw InputError("opencl: element type " + std::string(dtype_name(t)) + " is not supported");
    }
}

std::string_view elem_type_name(std::int32_t code) {
    // Every type elem_type codes: the name comes from the code's type, so the two cannot disagree.
    for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::u8, DType::i8, DType::u4, DType::i4,
                    DType::f4e2m1, DType::f8e4m3, DType::f8e5m2, DType::f8e8m0})
        if (elem_type(t) == code) return dtype_name(t);
    throw std::logic_error("opencl: no element type has the code " + std::to_string(code));
}

}  // namespace moe::backends::ocl
