#!/usr/bin/env python3
"""Compressed weights written by a user with h5py in the documented layout (spec/golden-format.md,
"Compressed weights"; spec/compressed.md), completed by `moe-golden complete`, and checked against
an independent numpy computation: numpy's own decoders of the codes (E2M1, E4M3, E5M2, E8M0),
(W - Z) * S per group in float64, then the op of spec/README.md. Every compressed type, both expert
types, per group and per channel, with and without zero points, every accepted scale layout.

usage: check_complete_compressed.py MOE_GOLDEN WORK_DIR
"""
import sys
from pathlib import Path

import h5py
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_complete_against_numpy import complete_agrees, from_bf16_bits, numpy_moe, store, to_bf16_bits  # noqa: E402

E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


def decode_minifloat(codes, ebits, mbits, bias):
    """An OCP 8-bit float code as float64 (no special values: the callers mask them)."""
    c = codes.astype(np.int64)
    sign = np.where((c >> (ebits + mbits)) & 1, -1.0, 1.0)
    e = (c >> mbits) & ((1 << ebits) - 1)
    m = c & ((1 << mbits) - 1)
    normal = (1.0 + m / 2.0**mbits) * np.exp2(e - bias)
    sub = (m / 2.0**mbits) * np.exp2(1 - bias)
    return sign * np.where(e == 0, sub, normal)


def decode(codes, element_type):
    """What the stored values of one dataset mean, as float64 (numpy's reading, not the project's)."""
    if element_type in ("u8", "i8", "u4", "i4"):
        return codes.astype(np.float64)
    if element_type == "f4e2m1":
        return E2M1[codes.astype(np.int64)]
    if element_type == "f8e4m3":
        return decode_minifloat(codes, 4, 3, 7)
    if element_type == "f8e5m2":
        return decode_minifloat(codes, 5, 2, 15)
    if element_type == "f8e8m0":
        return np.exp2(codes.astype(np.float64) - 127.0)
    if element_type == "bf16":
        return from_bf16_bits(codes)
    return codes.astype(np.float64)


def write(group, name, data, element_type, **attrs):
    d = group.create_dataset(name, data=data)
    d.attrs["element_type"] = element_type
    for k, v in attrs.items():
        d.attrs[k] = v
    return decode(np.asarray(data), element_type)


def scale_values(rng, element_type, shape, magnitude):
    """Scales in their stored form: f32/f16 arrays, bf16 bit patterns, E8M0 codes."""
    if element_type == "f8e8m0":
        e = int(np.round(np.log2(magnitude)))
        return (rng.integers(e - 1, e + 2, shape) + 127).astype(np.uint8)
    v = magnitude * rng.uniform(0.5, 1.5, shape)
    if element_type == "bf16":
        return to_bf16_bits(v)
    return v.astype({"f32": np.float32, "f16": np.float16}[element_type])


def compressed_weight(g, rng, name, E, N, K, wtype, gs, stype, zp, layout):
    """Writes weight `name` compressed; returns its float64 values, dequantised by numpy."""
    G = K // gs
    rows = 1 if layout == "E1G" else N
    pshape = (E, rows, G, 1) if layout == "ENG1" else (E, rows, G)
    lo, hi = {"u8": (0, 255), "i8": (-128, 127), "u4": (0, 15), "i4": (-8, 7)}.get(wtype, (0, 15))
    if wtype in ("u8", "i8", "u4", "i4"):
        codes = rng.integers(lo, hi + 1, (E, N, K)).astype(np.int8 if lo < 0 else np.uint8)
        span = max(-lo, hi)
    elif wtype == "f4e2m1":
        codes, span = rng.integers(0, 16, (E, N, K)).astype(np.uint8), 6.0
    else:  # FP8: any code but the NaNs and infinities
        codes = rng.integers(0, 256, (E, N, K)).astype(np.uint8)
        special = (codes & 0x7F) == 0x7F if wtype == "f8e4m3" else (codes & 0x7C) == 0x7C
        codes[special] = 0x11
        span = 448.0 if wtype == "f8e4m3" else 57344.0
    w = write(g, name, codes, wtype, group_size=np.int64(gs))
    s = write(g, name + "_scale", scale_values(rng, stype, pshape, 1.0 / np.sqrt(K) / span), stype)
    z = np.zeros(pshape)
    if zp:
        zcodes = rng.integers(lo, hi + 1, pshape)
        if zp == "f16":
            z = write(g, name + "_zero_point", zcodes.astype(np.float16), "f16")
        else:
            z = write(g, name + "_zero_point", zcodes.astype(np.int8 if lo < 0 else np.uint8), wtype)
    s3, z3 = s.reshape(E, rows, G), z.reshape(E, rows, G)
    s_full = np.broadcast_to(np.repeat(s3, gs, axis=2), (E, N, K))
    z_full = np.broadcast_to(np.repeat(z3, gs, axis=2), (E, N, K))
    return (w - z_full) * s_full


def make_case(path, rng, expert_type, dtype, wtype, gs, stype, zp, layout):
    T, H, I, E, K = 5, 64, 32, 4, 2
    alpha, beta = (6.0, 1.702) if expert_type == "GEMM2_BIAS_SWIGLU_CLAMP" else (0.0, 1.3)
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "moe-golden"
        f.attrs["format_version"] = 2
        f.attrs["case"] = path.stem
        f.attrs["expert_type"] = expert_type
        f.attrs["convention"] = "openvino"
        f.attrs["expert_alpha"] = alpha
        f.attrs["expert_beta"] = beta
        f.attrs["gate_idx"] = 0
        g = f.create_group("inputs")
        x = store(g, "hidden_states", rng.uniform(-4, 4, (T, H)), dtype)
        idx = np.stack([rng.permutation(E)[:K] for _ in range(T)])
        store(g, "router_topk_output_indices", idx, "i32")
        logits = rng.uniform(-2, 2, (T, K))
        w = store(g, "routing_weights", np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True), dtype)
        if expert_type == "GEMM2_BIAS_SWIGLU_CLAMP":
            w0 = compressed_weight(g, rng, "weight_0", E, 2 * I, H, wtype, gs or H, stype, zp, layout)
            w1 = compressed_weight(g, rng, "weight_1", E, H, I, wtype, gs or I, stype, zp, layout)
            b0 = store(g, "bias_0", rng.uniform(-0.5, 0.5, (E, 1, 2 * I)), dtype)
            b1 = store(g, "bias_1", rng.uniform(-0.5, 0.5, (E, H)), dtype)
            weights, biases = (w0, w1), (b0, b1)
        else:
            weights = tuple(compressed_weight(g, rng, n, E, N, Kk, wtype, gs or Kk, stype, zp, layout)
                            for n, N, Kk in (("weight_0", I, H), ("weight_1", I, H), ("weight_2", H, I)))
            biases = None
    return numpy_moe(expert_type, "openvino", alpha, beta, 0, x, idx, w, weights, biases)


def main():
    moe_golden, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261123)
    # (weight type, group size (0: per channel), scale type, zero point, scale layout, data type)
    variants = [
        ("u8", 16, "f16", "same", "ENG", "f32"), ("u8", 0, "f16", None, "ENG", "f16"),
        ("i8", 16, "f32", "same", "ENG1", "f32"), ("i8", 0, "bf16", None, "ENG", "bf16"),
        ("u4", 16, "f16", "f16", "ENG1", "f16"), ("u4", 0, "f16", "same", "ENG", "f32"),
        ("u4", 32, "bf16", None, "ENG", "bf16"), ("i4", 16, "f16", "same", "ENG", "f32"),
        ("i4", 0, "f32", None, "E1G", "f64"),
        ("f4e2m1", 32, "f8e8m0", None, "ENG", "bf16"), ("f4e2m1", 32, "f8e8m0", None, "ENG1", "f32"),
        ("f8e4m3", 0, "f32", None, "ENG", "f32"), ("f8e4m3", 0, "f32", None, "E1G", "bf16"),
        ("f8e5m2", 16, "f32", None, "ENG", "f16"), ("f8e5m2", 0, "f32", None, "E1G", "f32"),
    ]
    passed = failed = 0
    for expert_type in ("GEMM2_BIAS_SWIGLU_CLAMP", "GEMM3_SWIGLU"):
        for wtype, gs, stype, zp, layout, dtype in variants:
            name = f"{expert_type.split('_')[0].lower()}_{wtype}_g{gs}_{stype}_{zp or 'nozp'}_{layout}_{dtype}"
            path = work / f"{name}.h5"
            want = make_case(path, rng, expert_type, dtype, wtype, gs, stype, zp, layout)
            ok = complete_agrees(moe_golden, path, want)
            passed, failed = passed + ok, failed + (not ok)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
