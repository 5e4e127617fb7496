#pragma once
// The element type codes the kernels take (kernels/common.cl's MOE_F32 .. MOE_F64 and
// compressed_values.cl's MOE_U8 .. MOE_F8E8M0), in one place for the uploads, the launches and the
// compressed programs' -D constants and names.
#include <cstdint>
#include <string_view>

#include "moe/spec/dtype.hpp"

namespace moe::backends::ocl {

// The code of t; a type no kernel takes is an InputError naming it.
std::int32_t elem_type(DType t);
// The name of the type whose code is `code` ("u4", "f8e8m0"); std::logic_error for no such code.
std::string_view elem_type_name(std::int32_t code);

}  // namespace moe::backends::ocl
