#include "hdf5/h5_types.hpp"

namespace moe::golden::h5 {

namespace {

// HDF5 has no predefined half type: derive one from a 32-bit IEEE float of the wanted byte order.
H5Id make_half_type(hid_t float32_base) {
    hid_t t = H5Tcopy(float32_base);
    if (t < 0) return H5Id();
    H5Id type(t, H5Tclose);
    const bool ok = H5Tset_fields(t, 15, 10, 5, 0, 10) >= 0 && H5Tset_precision(t, 16) >= 0 &&
                    H5Tset_offset(t, 0) >= 0 && H5Tset_size(t, 2) >= 0 && H5Tset_ebias(t, 15) >= 0;
    return ok ? std::move(type) : H5Id();
}

bool is_signed_int(hid_t type, std::size_t size) {
    return H5Tget_class(type) == H5T_INTEGER && H5Tget_size(type) == size && H5Tget_sign(type) != H5T_SGN_NONE;
}

}  // namespace

bool is_ieee_half(hid_t type) {
    if (H5Tget_class(type) != H5T_FLOAT || H5Tget_size(type) != 2) return false;
    std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
    if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0) return false;
    return spos == 15 && epos == 10 && esize == 5 && mpos == 0 && msize == 10 && H5Tget_ebias(type) == 15 &&
           H5Tget_precision(type) == 16 && H5Tget_offset(type) == 0;
}

H5Id element_h5_type(DType dt, bool in_file) {
    auto copy = [](hid_t base) {
        hid_t t = H5Tcopy(base);
        return t < 0 ? H5Id() : H5Id(t, H5Tclose);
    };
    switch (dt) {
        case DType::f64: return copy(in_file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE);
        case DType::f32: return copy(in_file ? H5T_IEEE_F32LE : H5T_NATIVE_FLOAT);
        case DType::f16: return make_half_type(in_file ? H5T_IEEE_F32LE : H5T_NATIVE_FLOAT);
        case DType::bf16: return copy(in_file ? H5T_STD_U16LE : H5T_NATIVE_UINT16);
        case DType::i32: return copy(in_file ? H5T_STD_I32LE : H5T_NATIVE_INT32);
        case DType::i64: return copy(in_file ? H5T_STD_I64LE : H5T_NATIVE_INT64);
        // One element per byte (4-bit types too): integers as their value, float codes as bits.
        case DType::i8: case DType::i4: return copy(in_file ? H5T_STD_I8LE : H5T_NATIVE_INT8);
        case DType::u8: case DType::u4: case DType::f4e2m1: case DType::f8e4m3: case DType::f8e5m2:
        case DType::f8e8m0: return copy(in_file ? H5T_STD_U8LE : H5T_NATIVE_UINT8);
    }
    return H5Id();
}

std::string describe_h5_type(hid_t type) {
    const std::string bits = std::to_string(H5Tget_size(type) * 8) + "-bit ";
    switch (H5Tget_class(type)) {
        case H5T_FLOAT: return bits + (is_ieee_half(type) ? "IEEE half float" : "float");
        case H5T_INTEGER: return bits + (H5Tget_sign(type) == H5T_SGN_NONE ? "unsigned integer" : "signed integer");
        case H5T_STRING: return "string";
        case H5T_COMPOUND: return "compound";
        case H5T_ENUM: return "enum";
        case H5T_ARRAY: return "array";
        case H5T_VLEN: return "variable-length sequence";
        default: return "non-numeric type";
    }
}

bool stored_type_matches(DType dt, hid_t type) {
    const H5T_class_t cls = H5Tget_class(type);
    const std::size_t size = H5Tget_size(type);
    switch (dt) {
        case DType::f64: return cls == H5T_FLOAT && size == 8;
        case DType::f32: return cls == H5T_FLOAT && size == 4;
        case DType::f16: return is_ieee_half(type);
        case DType::bf16: return cls == H5T_INTEGER && size == 2;  // bit patterns; either sign
        case DType::i32: return is_signed_int(type, 4);
        case DType::i64: return is_signed_int(type, 8);
        case DType::i8: case DType::i4: return is_signed_int(type, 1);
        case DType::u8: case DType::u4:
            return cls == H5T_INTEGER && size == 1 && H5Tget_sign(type) == H5T_SGN_NONE;
        case DType::f4e2m1: case DType::f8e4m3: case DType::f8e5m2: case DType::f8e8m0:
            return cls == H5T_INTEGER && size == 1;  // codes; either sign keeps the bits
    }
    return false;
}

// 1-byte integers are never guessed either: u8, u4 and the float codes share the storage.
std::optional<DType> infer_element_type(hid_t type) {
    for (DType dt : {DType::f64, DType::f32, DType::f16, DType::i32, DType::i64})
        if (stored_type_matches(dt, type)) return dt;
    return std::nullopt;
}

}  // namespace moe::golden::h5
