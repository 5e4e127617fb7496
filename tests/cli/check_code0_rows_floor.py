#!/usr/bin/python3
"""The underflow floor per output (spec/tolerance.md, "Underflow") on random_catalog.py --decode's
rows of E8M0 scale code 0: in each such case of the suite, the cpu backend's own result passes
and the same result with those rows read as +0 (a decoder that takes code 0, 2^-127, for zero)
fails. With the floor of a whole token (the largest row of the down weight), the zeroed rows of
d102_18 passed at 0.34 of their bound.

    check_code0_rows_floor.py MOE_CONFORM CATALOG.json SUITE_DIR"""
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

import h5py

conform, catalog, suite = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
failures = []


def expect(what, ok):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def check(case, results):
    r = subprocess.run([conform, "check", "--case", str(case), "--results", str(results)], capture_output=True,
                       text=True, timeout=300)
    return r.returncode, r.stdout


cases = [c for c in json.loads(catalog.read_text())["cases"] if "_e8m0zero" in c["name"]]
expect("the catalogue holds cases with rows of E8M0 code 0 (%d)" % len(cases), len(cases) >= 1)
with tempfile.TemporaryDirectory() as tmp:
    for c in cases:
        golden = suite / (c["name"] + ".h5")
        out = pathlib.Path(tmp) / c["name"]
        r = subprocess.run([conform, "run", "--backend", "cpu", "--case", str(golden), "--write-results", str(out),
                            "--quiet"], capture_output=True, text=True, timeout=300)
        expect("%s: the cpu backend passes (exit %d)" % (c["name"], r.returncode), r.returncode == 0)
        result = out / (c["name"] + ".h5")
        rc, text = check(golden, result)
        expect("%s: its written result passes `check` (exit %d)" % (c["name"], rc), rc == 0 and "PASS" in text)
        rows = sorted({o["index"][1] for o in c["overrides"]
                       if o["input"].endswith("_scale") and o["value"] == 2.0 ** -127})
        zeroed = pathlib.Path(tmp) / (c["name"] + "_zeroed.h5")
        shutil.copy(result, zeroed)
        with h5py.File(zeroed, "r+") as f:
            out_ds = f["outputs/output"]
            values = out_ds[...]
            nonzero = int((values[..., rows] != 0).sum())  # output n is the last axis ([T, H] or [B, S, H])
            values[..., rows] = 0
            out_ds[...] = values
            del f["stages"]
        expect("%s: rows %s hold nonzero outputs (%d)" % (c["name"], rows, nonzero), nonzero > 0)
        rc, text = check(golden, zeroed)
        expect("%s: the same result with rows %s as +0 fails (exit %d)" % (c["name"], rows, rc),
               rc == 1 and "FAIL" in text)
if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("all checks passed")
