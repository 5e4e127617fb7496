"""case.dequantized(weight, experts=..., dtype=...) (check_python_package.py runs these): the chosen
experts' values are bit for bit those of the whole weight, in the order asked; the array is the
only memory the call takes, proportional to the experts asked (tracemalloc sees numpy's arrays);
a bad index is a ValueError naming the case, the weight, the index and the valid range; float32
is given only where every value is exact, and an expert not asked for is never read."""
import os
import shutil
import subprocess
import tracemalloc

import h5py
import numpy as np

import moe_conform

# u4 per group with f16 zero points, i8 per group, u8 per channel with a zero point, MXFP4, E4M3,
# and E5M2 with an infinity and a NaN code (compared as bits: the NaN is kept as it is).
FORMATS = ("compressed_u4_gemm3_group4_zp", "compressed_i8_gemm2_group4_nozp", "compressed_u8_gemm3_channel_zp",
           "compressed_mxfp4_gemm2_f32", "compressed_f8e4m3_gemm3_group4", "compressed_f8e5m2_inf_nan_codes")


def compressed_weights(case):
    return [n for n in case.input_types if n + "_scale" in case.input_types]


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(np.uint64), b.view(np.uint64))


def check_values(suite, expect):
    for name in FORMATS:
        case = moe_conform.load_case(os.path.join(suite, name + ".h5"))
        for weight in compressed_weights(case):
            full = case.dequantized(weight)
            E = full.shape[0]
            asked = {"reversed, one twice": list(range(E))[::-1] + [E - 1], "numpy": np.array([E - 1, 0], np.int32),
                     "range": range(1, E), "none": []}
            for what, experts in asked.items():
                got = case.dequantized(weight, experts=experts)
                expect(same_bits(got, full[list(experts)]) and got.flags.c_contiguous,
                       f"{name} {weight} experts={what}: not the rows of dequantized({weight!r})")


def traced(call):
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def check_memory(suite, expect):
    case = moe_conform.load_case(os.path.join(suite, "compressed_mxfp4_gemm2_f32.h5"))
    full, _ = traced(lambda: case.dequantized("weight_0"))
    one = full[0].nbytes
    for experts in ([1], [2, 0], [0, 1, 2, 1]):
        w, peak = traced(lambda: case.dequantized("weight_0", experts=experts))
        # The array itself and a few hundred bytes of bookkeeping: no other expert, no second copy.
        expect(w.nbytes == len(experts) * one and w.nbytes <= peak < w.nbytes + 4096,
               f"dequantized(experts={experts}): {peak} bytes traced for {len(experts)} experts of {one} bytes")
    w, peak = traced(lambda: case.dequantized("weight_0", experts=[2], dtype=np.float32))
    expect(w.nbytes == one // 2 and peak < w.nbytes + 4096, f"float32 expert: {peak} bytes traced for {w.nbytes}")


def check_refusals(suite, expect):
    name = "compressed_u4_gemm3_group4_zp"
    case = moe_conform.load_case(os.path.join(suite, name + ".h5"))
    E = case.attrs["E"]
    bad = {"E": ([0, E], str(E)), "negative": ([-1], "-1"), "float": ([1.5], "1.5"), "bool": ([True], "True"),
           "text": (["1"], "'1'"), "huge": ([2 ** 70], str(2 ** 70)), "not iterable": (1, "not 1")}
    for what, (experts, shown) in bad.items():
        try:
            case.dequantized("weight_1", experts=experts)
            expect(False, f"experts={experts!r} ({what}) accepted")
        except ValueError as e:
            message = str(e)
            expect(name in message and "weight_1" in message and shown in message
                   and (what == "not iterable" or f"0 to {E - 1}" in message),
                   f"experts={experts!r} ({what}): {message}")


def check_float32(moe, suite, work, expect):
    """float32 where the scale type makes every value exact (f16, bf16, E8M0), refused for f32
    scales and for a value beyond float32's range, which an expert not asked for may hold."""
    for name, scale in (("compressed_u4_gemm3_group4_zp", "f16"), ("compressed_i4_gemm2_group4_zp", "bf16"),
                        ("compressed_mxfp4_gemm3_bf16", "f8e8m0"), ("compressed_mxfp4_e8m0_min_scale", "f8e8m0")):
        case = moe_conform.load_case(os.path.join(suite, name + ".h5"))
        for weight in compressed_weights(case):
            want = case.dequantized(weight, experts=[1, 0])
            got = case.dequantized(weight, experts=[1, 0], dtype=np.float32)
            expect(case.input_types[weight + "_scale"] == scale and got.dtype == np.float32
                   and same_bits(got.astype(np.float64), want), f"{name} {weight}: float32 values not the float64 ones")
    f32_scales = "compressed_i8_gemm2_group4_nozp"
    try:
        moe_conform.load_case(os.path.join(suite, f32_scales + ".h5")).dequantized("weight_0", dtype=np.float32)
        expect(False, "float32 given for f32 scales")
    except ValueError as e:
        expect(f32_scales in str(e) and "f32 scales" in str(e), f"f32 scales refused: {e}")

    # Expert 0's first block scaled by 2^127 (E8M0 code 254) with the E2M1 code 6: 1.5 * 2^129.
    path = os.path.join(work, "mxfp4_beyond_float32.h5")
    shutil.copy(os.path.join(suite, "compressed_mxfp4_gemm2_f32.h5"), path)
    with h5py.File(path, "r+") as f:
        del f["outputs"], f["stages"]
        for dataset, code in (("inputs/weight_0_scale", 254), ("inputs/weight_0", 7)):
            values = f[dataset][...]
            values.flat[0] = code
            f[dataset][...] = values
    golden = os.path.join(os.path.dirname(moe), "moe-golden")
    r = subprocess.run([golden, "complete", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        expect(False, f"moe-golden complete {path}: {r.stdout}")
        return
    case = moe_conform.load_case(path)
    try:
        case.dequantized("weight_0", dtype=np.float32)
        expect(False, "a value beyond float32's range given as float32")
    except ValueError as e:
        expect("expert 0 [0, 0]" in str(e) and "beyond its range" in str(e), f"beyond float32 refused: {e}")
    others = case.dequantized("weight_0", experts=[2, 1], dtype=np.float32)
    expect(same_bits(others.astype(np.float64), case.dequantized("weight_0")[[2, 1]]),
           "experts=[2, 1] in float32 read expert 0")


def check_dequantized_experts(moe, suite, work, expect):
    for check, args in ((check_values, (suite,)), (check_memory, (suite,)), (check_refusals, (suite,)),
                        (check_float32, (moe, suite, work))):
        try:
            check(*args, expect)
        except Exception as e:  # each check reports on its own: one raising does not hide the others
            expect(False, f"{check.__name__}: {type(e).__name__}: {e}")
