#!/usr/bin/env python3
"""How much the comparison can tell under a declared precision (spec/tolerance.md, "Vacuous
comparisons"): for every bundled case with elements, the verdict on the reference itself, its
negation and zeros, declared as bf16, f16 and f32 compute, through the Python door.

usage: PYTHONPATH=build/python python3 tools/scripts/declared_precision_power.py [SUITE_DIR]
"""
import collections
import glob
import os
import sys

import numpy as np

import moe_conform


def main():
    suite = sys.argv[1] if len(sys.argv) > 1 else "data/golden"
    cases = [moe_conform.load_case(f) for f in sorted(glob.glob(os.path.join(suite, "*.h5")))]
    cases = [c for c in cases if c.reference.size]
    outputs = {"reference": lambda r: r, "negation": lambda r: -r, "zeros": lambda r: r * 0.0}
    print(f"{len(cases)} cases with elements")
    for compute in ("bf16", "f16", "f32"):
        for name, make in outputs.items():
            counts = collections.Counter()
            for c in cases:
                with np.errstate(invalid="ignore"):  # 0 * Inf in a non-finite reference
                    out = make(c.reference)
                counts[moe_conform.check(c, out, compute=compute).status] += 1
            print(f"compute {compute:4}  {name:9}  " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
