#!/usr/bin/env python3
"""A user's own inputs, written with h5py in the documented layout (spec/golden-format.md),
completed by `moe-golden complete`, and checked against an independent numpy float64
computation of spec/README.md: both expert types, both conventions, several element types.

usage: check_complete_against_numpy.py MOE_GOLDEN WORK_DIR
"""
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

TOLERANCE = 1e-12  # max |ours - numpy| / max |numpy|


def to_bf16_bits(x):
    """Round float64 -> float32 -> bf16 bits (ties to even on the float32 pattern)."""
    f = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (f + 0x7FFF + ((f >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def store(group, name, values, dtype):
    """Writes a tensor in the case's element type; returns it as float64 (what the op sees)."""
    if dtype == "bf16":
        bits = to_bf16_bits(values)
        d = group.create_dataset(name, data=bits)
        d.attrs["element_type"] = "bf16"
        return from_bf16_bits(bits)
    np_type = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64}[dtype]
    arr = np.asarray(values).astype(np_type)
    d = group.create_dataset(name, data=arr)
    if dtype in ("f16", "i32"):  # the others are left unlabelled, as a hand-written file may be
        d.attrs["element_type"] = dtype
    return arr.astype(np.float64)


def swish(x, beta):
    return x / (1.0 + np.exp(-beta * x))


def numpy_moe(expert_type, convention, alpha, beta, gate_idx, x, idx, w, weights, biases):
    """The op per spec/README.md, written independently with numpy."""
    T = idx.shape[0]
    H = x.shape[-1]
    x2 = x.reshape(T, H)
    out = np.zeros((T, H))
    if expert_type == "GEMM2_BIAS_SWIGLU_CLAMP":
        if convention == "spec":
            swish_beta, limit, lane = alpha, beta, 1
            w0 = np.transpose(weights[0], (0, 2, 1))  # KN [E, H, 2I] -> [E, 2I, H]
            w1 = np.transpose(weights[1], (0, 2, 1))
        else:
            swish_beta, limit, lane = beta, alpha, gate_idx
            w0, w1 = weights
        b0, b1 = biases
        for t in range(T):
            for k in range(idx.shape[1]):
                e = idx[t, k]
                gu = w0[e] @ x2[t] + b0[e].reshape(-1)
                gate = np.minimum(gu[lane::2], limit)
                lin = np.clip(gu[1 - lane::2], -limit, limit)
                act = (lin + 1.0) * swish(gate, swish_beta)
                out[t] += w[t, k] * (w1[e] @ act + b1[e].reshape(-1))
    else:
        swish_beta = alpha if convention == "spec" else beta
        w0, w1, w2 = weights  # all [E, N, K] (transpose_b)
        for t in range(T):
            for k in range(idx.shape[1]):
                e = idx[t, k]
                act = swish(w0[e] @ x2[t], swish_beta) * (w1[e] @ x2[t])
                out[t] += w[t, k] * (w2[e] @ act)
    return out.reshape(x.shape)


def make_case(path, rng, expert_type, convention, dtype, index_dtype, rank3):
    B, S, H, I, E, K = 2, 3, 24, 10, 5, 2
    T = B * S
    alpha, beta = (1.702, 6.0) if convention == "spec" else (6.0, 1.702)
    if expert_type == "GEMM3_SWIGLU":
        alpha, beta = (1.3, 0.0) if convention == "spec" else (0.0, 1.3)
    gate_idx = 0
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "moe-golden"
        f.attrs["format_version"] = 1
        f.attrs["case"] = path.stem
        f.attrs["expert_type"] = expert_type
        f.attrs["convention"] = convention
        f.attrs["expert_alpha"] = alpha
        f.attrs["expert_beta"] = beta
        if convention == "openvino":
            f.attrs["gate_idx"] = gate_idx
        g = f.create_group("inputs")
        x = store(g, "hidden_states", rng.uniform(-8, 8, (B, S, H) if rank3 else (T, H)), dtype)
        idx = np.stack([rng.permutation(E)[:K] for _ in range(T)])
        store(g, "router_topk_output_indices", idx, index_dtype)
        logits = rng.uniform(-2, 2, (T, K))
        w_tk = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        if convention == "spec":  # dense [E, B, S, 1] or [E, T, 1]
            dense = np.zeros((E, T))
            for t in range(T):
                dense[idx[t], t] = w_tk[t]
            dense = store(g, "routing_weights", dense.reshape((E, B, S, 1) if rank3 else (E, T, 1)), dtype)
            w = np.stack([dense.reshape(E, T)[idx[t], t] for t in range(T)])
        else:
            w = store(g, "routing_weights", w_tk, dtype)
        s = 1.0 / np.sqrt(H)
        if expert_type == "GEMM2_BIAS_SWIGLU_CLAMP":
            kn = convention == "spec"
            w0 = store(g, "weight_0", rng.uniform(-s, s, (E, H, 2 * I) if kn else (E, 2 * I, H)), dtype)
            w1 = store(g, "weight_1", rng.uniform(-s, s, (E, I, H) if kn else (E, H, I)), dtype)
            b0 = store(g, "bias_0", rng.uniform(-0.5, 0.5, (E, 1, 2 * I)), dtype)
            b1 = store(g, "bias_1", rng.uniform(-0.5, 0.5, (E, H)), dtype)
            weights, biases = (w0, w1), (b0, b1)
        else:
            weights = tuple(store(g, n, rng.uniform(-s, s, shape), dtype)
                            for n, shape in (("weight_0", (E, I, H)), ("weight_1", (E, I, H)), ("weight_2", (E, H, I))))
            biases = None
    return numpy_moe(expert_type, convention, alpha, beta, gate_idx, x, idx, w, weights, biases)


def complete_agrees(moe_golden, path, want):
    """Runs `moe-golden complete` on path and compares its output with numpy's `want`; prints one line."""
    run = subprocess.run([moe_golden, "complete", str(path)], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"FAIL {path.name}: moe-golden complete exited {run.returncode}: {run.stderr.strip()}")
        return False
    with h5py.File(path, "r") as f:
        got = f["outputs/output"][...]
    rel = np.max(np.abs(got - want)) / np.max(np.abs(want))
    ok = got.shape == want.shape and got.dtype == np.float64 and rel <= TOLERANCE
    print(f"{'ok  ' if ok else 'FAIL'} {path.name}: shape {got.shape}, max relative difference {rel:.2e}")
    return bool(ok)


def main():
    moe_golden, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261122)
    passed = failed = 0
    variants = [("f32", "i32", False), ("f64", "i64", True), ("f16", "i64", False), ("bf16", "i32", True)]
    for expert_type in ("GEMM2_BIAS_SWIGLU_CLAMP", "GEMM3_SWIGLU"):
        for convention in ("spec", "openvino"):
            for dtype, index_dtype, rank3 in variants:
                path = work / f"{expert_type.lower()}_{convention}_{dtype}.h5"
                want = make_case(path, rng, expert_type, convention, dtype, index_dtype, rank3)
                ok = complete_agrees(moe_golden, path, want)
                passed, failed = passed + ok, failed + (not ok)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
