#!/usr/bin/python3
"""Checks golden files with h5py alone, without moe-conform's reader (spec/golden-format.md).

Usage: check_golden_with_h5py.py <dir>

Every *.h5 file under <dir> (recursively) must open in h5py with the documented root attributes
and numpy dtypes, and every dataset must read in full (which verifies its Fletcher32 checksum).
Prints one line per file and a final "N passed, M failed"; exits non-zero if any file failed or
if there was no file at all (an empty suite proves nothing).
"""
import sys
from pathlib import Path

import h5py
import numpy as np

FORMAT_NAME = "moe-golden"
FORMAT_VERSIONS = (1, 2)  # 2: compressed weights
# element_type attribute -> the numpy dtype h5py must report for the dataset.
DTYPES = {
    "f64": np.dtype("float64"),
    "f32": np.dtype("float32"),
    "f16": np.dtype("float16"),
    "bf16": np.dtype("uint16"),  # bit patterns
    "i32": np.dtype("int32"),
    "i64": np.dtype("int64"),
    # Compressed weights (version 2): one element per byte, integers as their values.
    "u8": np.dtype("uint8"),
    "i8": np.dtype("int8"),
    "u4": np.dtype("uint8"),
    "i4": np.dtype("int8"),
    "f4e2m1": np.dtype("uint8"),  # E2M1 codes
    "f8e4m3": np.dtype("uint8"),  # bit patterns
    "f8e5m2": np.dtype("uint8"),
    "f8e8m0": np.dtype("uint8"),
}
COMPRESSED = ("u8", "i8", "u4", "i4", "f4e2m1", "f8e4m3", "f8e5m2")
# The values a stored element may take (4-bit types one per byte).
RANGES = {"u4": (0, 15), "i4": (-8, 7), "f4e2m1": (0, 15)}
GROUPS = ("inputs", "outputs", "stages")
F64_ONLY = ("outputs", "stages")


class Bad(Exception):
    pass


def require(cond, message):
    if not cond:
        raise Bad(message)


def check_root(f):
    attrs = f.attrs
    fmt = attrs.get("format")
    require(isinstance(fmt, str), "root attribute 'format' missing or not a string")
    require(fmt == FORMAT_NAME, f"format is {fmt!r}, expected {FORMAT_NAME!r}")
    version = attrs.get("format_version")
    require(isinstance(version, (int, np.integer)) and not isinstance(version, bool),
            "root attribute 'format_version' missing or not an integer")
    require(version in FORMAT_VERSIONS, f"format_version is {version}, expected one of {FORMAT_VERSIONS}")
    for name in ("case", "expert_type", "convention"):
        require(isinstance(attrs.get(name), str), f"root attribute {name!r} missing or not a string")


def check_dataset(group_name, name, d):
    path = f"/{group_name}/{name}"
    require(isinstance(d, h5py.Dataset), f"{path} is not a dataset")
    element_type = d.attrs.get("element_type")
    require(isinstance(element_type, str), f"{path}: attribute 'element_type' missing or not a string")
    require(element_type in DTYPES, f"{path}: unknown element_type {element_type!r}")
    if group_name in F64_ONLY:
        require(element_type == "f64", f"{path}: element_type is {element_type!r}, expected 'f64'")
    require(d.dtype == DTYPES[element_type],
            f"{path}: h5py dtype {d.dtype} for element_type {element_type!r}, expected {DTYPES[element_type]}")
    require(d.ndim >= 1, f"{path}: rank 0 is not used")
    if d.size > 0:
        require(d.fletcher32, f"{path}: no Fletcher32 checksum")
    try:
        data = d[()]
    except (OSError, RuntimeError, ValueError) as e:  # h5py raises OSError on a checksum failure
        raise Bad(f"{path}: reading failed (checksum?): {e}")
    require(data.shape == d.shape, f"{path}: read shape {data.shape}, expected {d.shape}")
    if element_type in RANGES and data.size:
        lo, hi = RANGES[element_type]
        require(int(data.min()) >= lo and int(data.max()) <= hi, f"{path}: {element_type} values outside [{lo}, {hi}]")
    return element_type


def check_compressed(f, version):
    """A compressed weight: version 2, a scale of [E, N or 1, G(, 1)], group_size = K / G."""
    inputs = f["inputs"]
    for name in ("weight_0", "weight_1", "weight_2"):
        if name not in inputs or inputs[name].attrs["element_type"] not in COMPRESSED:
            continue
        require(version == 2, f"/inputs/{name} is compressed in a format_version {version} file")
        w = inputs[name]
        require(name + "_scale" in inputs, f"/inputs/{name}_scale missing")
        s = inputs[name + "_scale"]
        require(s.ndim in (3, 4) and s.shape[0] == w.shape[0] and s.shape[1] in (1, w.shape[1]),
                f"/inputs/{name}_scale has shape {s.shape} for a weight {w.shape}")
        gs = int(w.attrs["group_size"])
        require(gs * s.shape[2] == w.shape[2], f"/inputs/{name}: group_size {gs} x {s.shape[2]} groups != K")


def check_file(path):
    with h5py.File(path, "r") as f:
        check_root(f)
        require("inputs" in f, "group /inputs missing")
        for group_name in GROUPS:
            if group_name not in f:
                continue
            group = f[group_name]
            require(isinstance(group, h5py.Group), f"/{group_name} is not a group")
            for name in group:
                check_dataset(group_name, name, group[name])
        check_compressed(f, int(f.attrs["format_version"]))
        require("outputs/output" in f, "dataset /outputs/output missing")
        require("hidden_states" in f["inputs"], "dataset /inputs/hidden_states missing")
        out_shape, hidden_shape = f["outputs/output"].shape, f["inputs/hidden_states"].shape
        require(out_shape == hidden_shape,
                f"/outputs/output has shape {out_shape}, /inputs/hidden_states {hidden_shape}")


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} <dir>", file=sys.stderr)
        return 2
    root = Path(argv[1])
    if not root.is_dir():
        print(f"{root}: not a directory", file=sys.stderr)
        return 2
    passed = failed = 0
    for path in sorted(root.rglob("*.h5")):
        try:
            check_file(path)
        except Bad as e:
            failed += 1
            print(f"FAIL {path}: {e}")
        except Exception as e:  # not HDF5, truncated, ...: a failure of this file, not of the run
            failed += 1
            print(f"FAIL {path}: {type(e).__name__}: {e}")
        else:
            passed += 1
            print(f"ok   {path}")
    if passed + failed == 0:
        print(f"no .h5 file under {root}: an empty suite does not pass")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
