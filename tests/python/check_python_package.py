#!/usr/bin/env python3
"""import moe_conform from the build tree, as a user would: a case's inputs and attributes match
what h5py reads from the file; check() gives the numbers `moe-conform check` gives for the same
output; an exception or a wrong return value in the function under test is that case's ERROR and
the run goes on.

usage: check_python_package.py MOE_CONFORM SUITE WORK_DIR   (PYTHONPATH: build/python)
"""
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

import moe_conform


def main():
    moe, suite, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    # Inputs exactly as stored: bf16 bit patterns widened to float32, f16 as float16.
    path = os.path.join(suite, "gemm2_gptoss_spec_bf16.h5")
    case = moe_conform.load_case(path)
    with h5py.File(path, "r") as f:
        bits = f["inputs/weight_0"][...].astype(np.uint32) << 16
    expect(case.input_types["weight_0"] == "bf16", "bf16 input type")
    expect(np.array_equal(case.inputs["weight_0"], bits.view(np.float32)), "bf16 values widened exactly")
    expect(case.attrs["expert_type"] == "GEMM2_BIAS_SWIGLU_CLAMP" and case.convention == "spec", "attributes")
    expect(case.reference.dtype == np.float64, "reference is f64")
    f16 = moe_conform.load_case(os.path.join(suite, "gemm3_qwen_spec_f16.h5"))
    expect(f16.inputs["hidden_states"].dtype == np.float16, "f16 input as float16")

    # check() and `moe-conform check` on the same output give the same verdict and numbers.
    name = "gemm3_qwen_openvino_f32"
    golden = os.path.join(suite, name + ".h5")
    case = moe_conform.load_case(golden)
    output = case.reference.astype(np.float32) * np.float32(1.0001)
    result = moe_conform.check(case, output, compute="f32")
    npy = os.path.join(work, "out.npy")
    np.save(npy, output)
    report = os.path.join(work, "cli.json")
    r = subprocess.run([moe, "check", "--quiet", "--case", golden, "--results", npy, "--precision", "f32",
                        "--json", report], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(report) as f:
        cli = json.load(f)["results"][0]
    expect(result.status == cli["status"], f"status {result.status} vs CLI {cli['status']}")
    expect(result.worst_ratio == cli["metrics"]["worst_ratio"], "worst_ratio equals the CLI's")
    expect(result.max_abs == cli["metrics"]["max_abs_error"], "max_abs equals the CLI's")
    expect(result.over_bound == cli["metrics"]["over_bound"], "over_bound equals the CLI's")
    expect(r.returncode == (1 if result.status == "FAIL" else 0), "CLI exit code matches")
    expect(result.status == "FAIL" and result.worst_element is not None, "a 1e-4 relative error fails in f32")

    # The function under test: an exception, a wrong type, a wrong shape; the run goes on.
    def fn(c):
        if c.name.startswith("gemm3_qwen_spec"):
            raise RuntimeError("kernel launch failed")
        if c.name.startswith("gemm2_gptoss_spec"):
            return [1, 2, 3]
        return np.zeros((1, 1), np.float32)

    summary = moe_conform.run_suite(fn, suite, filter=["gemm3_qwen_spec_*", "gemm2_gptoss_spec_*", "topk_one"],
                                    quiet=True)
    by = {x.case: x for x in summary.results}
    expect(summary.exit_code == 1, f"exit code {summary.exit_code}")
    expect(by["gemm3_qwen_spec_f32"].status == "ERROR" and "kernel launch failed" in by["gemm3_qwen_spec_f32"].reason,
           "exception -> ERROR with its message")
    expect(by["gemm2_gptoss_spec_f32"].status == "ERROR" and "numpy array" in by["gemm2_gptoss_spec_f32"].reason,
           "wrong type -> ERROR naming it")
    expect(by["topk_one"].status == "FAIL" and "shape" in by["topk_one"].reason, "wrong shape -> FAIL")
    expect(len(summary.results) == 9, f"{len(summary.results)} results for the filter")
    try:
        moe_conform.run_suite(fn, suite, compute="f33")
        expect(False, "unknown compute type accepted")
    except ValueError as e:
        expect("f33" in str(e), "unknown compute type named")

    for f in failures:
        print("FAIL", f)
    print(f"python package: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
