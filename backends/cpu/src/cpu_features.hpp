#pragma once
// Whether this CPU runs the backend's AVX-512 code paths (kernels, activations, conversions):
// AVX-512 F/BW/VL with F16C and FMA. Each path falls back to portable code otherwise.
namespace moe::backends::cpu {

inline bool cpu_has_avx512() {
    static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("f16c") &&
                            __builtin_cpu_supports("fma");
    return yes;
}

// AVX512_BF16 (vdpbf16ps) and AVX512_VBMI (vpermb, vpmultishiftqb) on top of the above: the
// compressed decode kernels on bf16 activations.
inline bool cpu_has_avx512_bf16() {
    static const bool yes =
        cpu_has_avx512() && __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vbmi");
    return yes;
}

// AVX512_VNNI (vpdpbusd), AVX512_VBMI and GFNI (a byte's high nibble in one operation) on top of
// AVX-512: the compressed decode kernels' int8 products.
inline bool cpu_has_int_dot() {
    static const bool yes = cpu_has_avx512() && __builtin_cpu_supports("avx512vnni") &&
                            __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("gfni");
    return yes;
}

}  // namespace moe::backends::cpu
