#!/usr/bin/env python3
"""The compressed-weight term of spec/tolerance.md, measured: for every compressed case of a suite
and every backend whose outputs were written with `moe-conform run --write-results DIR`, the worst
observed error / bound with the term u_D (the backend's declared dequantisation type) and without
it, per weight type and data type. Bounds are computed in numpy from the stored bound_* tensors,
as a tool outside the project would.

usage: compressed_tolerance_table.py SUITE_DIR RESULTS_DIR
       (RESULTS_DIR holds one subfolder per backend, as `moe-conform run --backend a,b --write-results` writes)
"""
import math
import sys
from collections import defaultdict
from pathlib import Path

import h5py
import numpy as np

U = {"f64": 2.0**-53, "f32": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8}
# Half the smallest subnormal of the output type: the output rounding's absolute floor.
FLOOR = {"f64": 2.0**-1075, "f32": 2.0**-150, "f16": 2.0**-25, "bf16": 2.0**-134}
LAMBDA = 6.0
COMPRESSED = ("u8", "i8", "u4", "i4", "f4e2m1", "f8e4m3", "f8e5m2")
# The dequantisation type each built-in backend declares (Precision::dequant; absent: compute).
DEQUANT = {"reference": lambda d: "f64", "reference_dense": lambda d: "f64", "loop_f32": lambda d: "f32",
           "loop_lowp": lambda d: d if d in ("f16", "bf16") else "f32", "cpu": lambda d: "f64" if d == "f64" else "f32",
           "blockwise": lambda d: "f32", "expert_parallel": lambda d: "f32", "opencl": lambda d: "f32"}


def g(n, u):
    nu = n * u
    return min(nu / (1 - nu) if nu < 1 else math.inf, LAMBDA * math.sqrt(n) * u)


def read_output(path):
    with h5py.File(path, "r") as f:
        d = f["outputs/output"]
        v = d[...]
        if d.attrs.get("element_type") == "bf16":
            v = (v.astype(np.uint32) << 16).view(np.float32)
        return v.astype(np.float64), f.attrs.get("compute_type", "f32"), f.attrs.get("storage_type", None)


def bounds(f, compute, storage, dequant):
    """(bound with the dequantisation term, bound without it)."""
    data = f["inputs/hidden_states"].attrs["element_type"]
    H = f["inputs/hidden_states"].shape[-1]
    K = f["inputs/router_topk_output_indices"].shape[-1]
    gemm2 = f.attrs["expert_type"] == "GEMM2_BIAS_SWIGLU_CLAMP"
    I = f["inputs/" + ("weight_1" if gemm2 else "weight_2")].shape[-1]  # [E, H, I] (compressed: NK)
    uc, um, ut, ud = U[compute], U[storage], U[data], U[dequant]
    inp = 2 * uc if uc > ut else 0.0
    comp = lambda w: w in f["inputs"] and f["inputs"][w].attrs["element_type"] in COMPRESSED
    first = comp("weight_0") or (not gemm2 and comp("weight_1"))
    down = comp("weight_1" if gemm2 else "weight_2")
    coef = {"first_acc": g(H + 1, uc) + inp, "first_store": um, "act_eval": uc, "act_store": um,
            "down_acc": g(I + 1, uc) + inp, "down_store": um + g(K + 1, uc)}
    ref = f["outputs/output"][...]
    base = sum(c * f["outputs/bound_" + t][...] for t, c in coef.items()) + ut * np.abs(ref) + FLOOR[data]
    term = ud * ((f["outputs/bound_first_acc"][...] if first else 0) + (f["outputs/bound_down_acc"][...] if down else 0))
    return ref, base + term, base, data


def main():
    suite, results = Path(sys.argv[1]), Path(sys.argv[2])
    # (weight type, data type) -> backend -> [worst with term, worst without term, term share]
    table = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0, 0.0]))
    for golden in sorted(suite.glob("*.h5")):
        with h5py.File(golden, "r") as f:
            if "weight_0_scale" not in f["inputs"] or f.attrs.get("exact", 0):
                continue
            wtype = f["inputs/weight_0"].attrs["element_type"]
            for backend_dir in sorted(p for p in results.iterdir() if p.is_dir()):
                r = backend_dir / golden.name
                if not r.exists():
                    continue
                got, compute, storage = read_output(r)
                data = f["inputs/hidden_states"].attrs["element_type"]
                dequant = DEQUANT.get(backend_dir.name, lambda d: compute)(data)
                ref, with_term, without, data = bounds(f, compute, storage or compute, dequant)
                ok = np.isfinite(ref)
                err = np.abs(got[ok] - ref[ok])  # only where the reference is finite: inf - inf warns
                cell = table[(wtype, data)][backend_dir.name]
                cell[0] = max(cell[0], float(np.max(err / with_term[ok])))
                cell[1] = max(cell[1], float(np.max(err / without[ok])))
                cell[2] = max(cell[2], float(np.median(1 - without[ok] / with_term[ok])))
    backends = sorted({b for row in table.values() for b in row})
    print("| weights | data | " + " | ".join(backends) + " |")
    print("|---|---|" + "---|" * len(backends))
    for (wtype, data), row in sorted(table.items()):
        cells = []
        for b in backends:
            if b not in row:
                cells.append("")
                continue
            w, wo, share = row[b]
            cells.append(f"{w:.3f} ({wo:.3f}; {100 * share:.0f} %)")
        print(f"| {wtype} | {data} | " + " | ".join(cells) + " |")
    print("\nEach cell: worst error / bound over the cases (the same without the dequantisation term; the term's "
          "median share of the bound).")


if __name__ == "__main__":
    sys.exit(main())
