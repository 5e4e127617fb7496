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

// Whether the decode kernels for 4-bit weights take int8 products where the CPU has both engines
// (DecodeProducts::automatic). The int8 chunk costs more instructions than the bf16 one (the
// high nibbles, three digit products, the bias, a conversion), and wins only where vdpbf16ps is
// the slower instruction: on the Intel Xeon measured (family 6 model 207, vdpbf16ps one every two
// cycles) GPT-OSS-20B's decode layer ran 1.3-1.5x faster on int8 products; on an AMD EPYC (family
// 26 model 2, Zen 5) 1.1-1.6x slower (docs/compressed.md, "Decode products by processor"). So by
// vendor, as measured: int8 on Intel, the bf16 engine elsewhere.
inline bool cpu_prefers_int_dot() {
    static const bool yes = cpu_has_int_dot() && __builtin_cpu_is("intel");
    return yes;
}

}  // namespace moe::backends::cpu
