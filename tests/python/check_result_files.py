#!/usr/bin/env python3
"""`moe-conform check` on result files written with h5py and numpy as a user would: good files
pass; each bad file exits 2 with its fault named; NaN where the reference is finite is a FAIL;
a missing result is an ERROR; --shard splits the cases without overlap.

usage: check_result_files.py MOE_CONFORM SUITE WORK_DIR
"""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

CASE = "gemm3_qwen_spec_f32"


def run(*args):
    r = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r.returncode, r.stdout


def sha256(path):
    import hashlib
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_result(path, case, golden_sha, output, compute="f32", stages=None, **extra):
    """A result file in a few lines of h5py (spec/results-format.md)."""
    with h5py.File(path, "w") as f:
        f.attrs["format"] = "moe-result"
        f.attrs["format_version"] = 1
        f.attrs["case"] = case
        f.attrs["golden_sha256"] = golden_sha
        f.attrs["implementation"] = "h5py_writer"
        if compute:
            f.attrs["compute_type"] = compute
        for k, v in extra.items():
            f.attrs[k] = v
        f.create_dataset("outputs/output", data=output)
        for name, v in (stages or {}).items():
            f.create_dataset("stages/" + name, data=v)


def main():
    moe, suite, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    golden = os.path.join(suite, CASE + ".h5")
    sha = sha256(golden)
    with h5py.File(golden, "r") as g:
        ref = g["outputs/output"][...]
    failures = []

    def expect(label, code, fragment, *args):
        rc, out = run(moe, "check", "--quiet", "--case", golden, *args)
        if rc != code or fragment not in out:
            failures.append(f"{label}: exit {rc} (want {code}), '{fragment}' {'found' if fragment in out else 'missing'}\n{out[-1500:]}")

    good = os.path.join(work, "good.h5")
    write_result(good, CASE, sha, ref.astype(np.float32))
    expect("good result", 0, "1 passed, 0 failed", "--results", good)
    np.save(os.path.join(work, "out.npy"), ref.astype(np.float32))
    expect("npy with --precision", 0, "1 passed", "--results", os.path.join(work, "out.npy"), "--precision", "f32")
    expect("npy without precision", 2, "declares no precision", "--results", os.path.join(work, "out.npy"))
    # "data" stands for the case's data type (f32 here), as in the Python door.
    expect("npy with --precision data", 0, "1 passed", "--results", os.path.join(work, "out.npy"), "--precision", "data")
    expect("npy with --precision f32/data/data", 0, "1 passed", "--results", os.path.join(work, "out.npy"),
           "--precision", "f32/data/data")
    # A header written by another tool than numpy: spaces around the colon and before the comma.
    spaced = os.path.join(work, "spaced.npy")
    data = np.ascontiguousarray(ref.astype("<f4"))
    header = "{'descr' : '<f4' , 'fortran_order': False , 'shape': %s }" % (tuple(data.shape),)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(spaced, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + data.tobytes())
    expect("npy header with other spacing", 0, "1 passed", "--results", spaced, "--precision", "f32")
    expect("npy with --precision f32/f99", 2, "'f99' is not f64, f32, f16, bf16 or data", "--results",
           os.path.join(work, "out.npy"), "--precision", "f32/f99")
    # --case picks its result out of a folder that answers more cases: the others are not extras.
    folder = os.path.join(work, "folder")
    os.makedirs(folder)
    shutil.copy(good, os.path.join(folder, CASE + ".h5"))
    other = os.path.join(suite, "topk_one.h5")
    with h5py.File(other, "r") as g:
        write_result(os.path.join(folder, "topk_one.h5"), "topk_one", sha256(other), g["outputs/output"][...])
    expect("a folder answering more cases", 0, "1 passed, 0 failed", "--results", folder)
    # --precision overrides the file's attributes, even a storage_type given without compute_type.
    half = os.path.join(work, "storage_only.h5")
    write_result(half, CASE, sha, ref.astype(np.float32), compute=None, storage_type="f32")
    expect("storage_type alone", 2, "compute_type", "--results", half)
    expect("storage_type alone, --precision", 0, "1 passed", "--results", half, "--precision", "f32")

    cases = {
        "shape": (dict(output=np.zeros((3, 3), np.float32)), "output shape [3, 3] is not hidden_states'"),
        "hash": (dict(golden_sha="0" * 64), "of another golden file"),
        "noprec": (dict(compute=None), "declares no precision"),
        "extra": (dict(case="no_such_case"), "not among the golden files of this run"),
        "int_output": (dict(output=np.zeros(ref.shape, np.int32)), "must hold floating values"),
        "bad_stage": (dict(stages={"gate_up": np.zeros((9, 3, 32), np.float32)}), "is not a stage of GEMM3_SWIGLU"),
        "stage_shape": (dict(stages={"act": np.zeros((9, 3, 5), np.float32)}), "stage 'act' has shape [9, 3, 5]"),
        "bad_compute": (dict(compute="i8"), "compute_type"),
    }
    for label, (kw, fragment) in cases.items():
        path = os.path.join(work, label + ".h5")
        args = dict(case=CASE, golden_sha=sha, output=ref.astype(np.float32))
        args.update(kw)
        write_result(path, args.pop("case"), args.pop("golden_sha"), args.pop("output"), **args)
        expect(label, 2, fragment, "--results", path)
    with open(os.path.join(work, "not_hdf5.h5"), "w") as f:
        f.write("not an HDF5 file")
    expect("not hdf5", 2, "not_hdf5.h5", "--results", os.path.join(work, "not_hdf5.h5"))

    nan = ref.astype(np.float32)
    nan[0, 0] = np.nan
    write_result(os.path.join(work, "nan.h5"), CASE, sha, nan)
    expect("NaN where the reference is finite", 1, "0 passed, 1 failed", "--results", os.path.join(work, "nan.h5"))

    # A missing result is an ERROR for that case, not a silent pass.
    other = os.path.join(suite, "gemm3_qwen_spec_f16.h5")
    rc, out = run(moe, "check", "--quiet", "--case", golden, "--case", other, "--results", good)
    if rc != 1 or "no result file answers this case" not in out:
        failures.append(f"missing result: exit {rc}\n{out[-1500:]}")

    # --shard: the shares of a suite are disjoint and cover it.
    seen = []
    for i in (1, 2, 3):
        rc, out = run(moe, "run", "--quiet", "--backend", "reference", "--suite", suite, "--shard", f"{i}/3",
                      "--json", os.path.join(work, f"shard{i}.json"))
        if rc != 0:
            failures.append(f"shard {i}/3: exit {rc}\n{out[-800:]}")
            continue
        import json
        with open(os.path.join(work, f"shard{i}.json")) as f:
            seen += [r["case"] for r in json.load(f)["results"]]
    total = len([f for f in os.listdir(suite) if f.endswith(".h5")])
    if len(seen) != total or len(set(seen)) != total:
        failures.append(f"shards: {len(seen)} results, {len(set(seen))} distinct, suite has {total}")
    rc, out = run(moe, "run", "--backend", "reference", "--suite", suite, "--shard", "4/3")
    if rc != 2 or "expected 1 <= I <= N" not in out:
        failures.append(f"--shard 4/3: exit {rc}\n{out[-500:]}")

    for f in failures:
        print("FAIL", f)
    print(f"{len(cases) + 7} checks, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
