#!/usr/bin/python3
"""Runs the documentation's h5py snippets that read a bundled golden file, as a user pastes them.

Usage: check_doc_snippets.py <repository root>

A snippet that no longer runs on the file it names (or computes something else) misleads every
reader who starts from it: each ```python block of the listed documents that opens a
data/golden file runs from the repository root, and what it leaves behind is checked against
values computed here another way. Exits non-zero naming the document and snippet that failed.
"""
import os
import re
import sys
from pathlib import Path

import h5py
import numpy as np

DOCUMENTS = ("spec/golden-format.md", "docs/moe-golden.md")


def python_blocks(text):
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def dequantised_elementwise(path, weight):
    """W_f[e, n, k] = (W - Z) * S of the group k // group_size, one element at a time."""
    with h5py.File(path, "r") as f:
        w = f["inputs/" + weight][...]
        gs = int(f["inputs/" + weight].attrs["group_size"])
        s = f["inputs/" + weight + "_scale"][...]
        z = f["inputs/" + weight + "_zero_point"][...]
    out = np.empty(w.shape)
    E, N, K = w.shape
    for e in range(E):
        for n in range(N):
            for k in range(K):
                g = k // gs
                out[e, n, k] = (float(w[e, n, k]) - float(z[e, n, g].item())) * float(s[e, n, g].item())
    return out


def check_snippet(doc, i, code):
    names = {}
    exec(compile(code, f"{doc} snippet {i}", "exec"), names)
    problems = []
    if "w_f" in names:  # the dequantisation example
        path = re.search(r'h5py\.File\("(data/golden/[^"]+)"', code).group(1)
        want = dequantised_elementwise(path, "weight_0")
        if names["w_f"].shape != want.shape or not np.array_equal(names["w_f"], want):
            problems.append("w_f differs from the element-by-element dequantisation")
    if "y" in names and names["y"].dtype != np.float64:
        problems.append("outputs/output is not float64")
    return problems


def main():
    root = Path(sys.argv[1])
    os.chdir(root)
    ran = failed = 0
    for doc in DOCUMENTS:
        for i, code in enumerate(python_blocks((root / doc).read_text()), 1):
            if not re.search(r'h5py\.File\("data/golden/', code):
                continue
            ran += 1
            try:
                problems = check_snippet(doc, i, code)
            except Exception as e:  # what a user pasting it would see
                problems = [f"{type(e).__name__}: {e}"]
            print(f"{doc} snippet {i}: {'; '.join(problems) if problems else 'ok'}")
            failed += bool(problems)
    print(f"{ran - failed} passed, {failed} failed")
    sys.exit(1 if failed or ran == 0 else 0)


if __name__ == "__main__":
    main()
