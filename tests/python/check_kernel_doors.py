#!/usr/bin/env python3
"""The doors a user's own kernel comes in by, as a new user met them: cases selected by expert type
(which their names do not say) in run_suite and `moe-conform run/check --expert-type`, with the
progress lines counting the selected cases alone (as --filter's do); a function that raises
moe_conform.Skip is SKIP with its reason in every report (all SKIP: exit_code 77, not 0); check's
missing result says what to do, not "backend threw".

usage: check_kernel_doors.py MOE_CONFORM SUITE WORK_DIR   (PYTHONPATH: build/python)
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import h5py
import numpy as np

import moe_conform


def expert_types(suite):
    types = {}
    for path in sorted(glob.glob(os.path.join(suite, "*.h5"))):
        with h5py.File(path, "r") as f:
            types[f.attrs["case"]] = f.attrs["expert_type"]
    return types


def counters(stderr):
    """The [n/total] of every progress line."""
    return [(int(a), int(b)) for a, b in re.findall(r"^\[(\d+)/(\d+)\] ", stderr, re.M)]


def check_python_selection(suite, types, work, expect):
    def skip_all(case):
        raise moe_conform.Skip("only counting")

    gemm3 = sorted(n for n, t in types.items() if t == "GEMM3_SWIGLU")
    for value in ("gemm3", "GEMM3_SWIGLU", "Gemm3_SwiGLU"):
        s = moe_conform.run_suite(skip_all, suite, expert_type=value, quiet=True)
        expect(sorted(r.case for r in s.results) == gemm3, f"expert_type={value!r}: {len(s.results)} cases")
    s = moe_conform.run_suite(skip_all, suite, expert_type="gemm2", filter="gemm3_*", quiet=True)
    expect(s.exit_code == 2 and not s.results, f"gemm2 and gemm3_*: exit {s.exit_code}, {len(s.results)} results")
    try:
        moe_conform.run_suite(skip_all, suite, expert_type="gemm4", quiet=True)
        expect(False, "expert_type='gemm4' accepted")
    except ValueError as e:
        expect("expert_type 'gemm4'" in str(e) and "gemm3" in str(e), f"bad expert_type: {e}")

    # The progress lines count what the selection holds (the walkthrough saw [162/170] for 88),
    # for filter and for expert_type: a child process, whose stderr the runner writes.
    selected = sorted(n for n, t in types.items() if t == "GEMM2_BIAS_SWIGLU_CLAMP" and n.startswith("gemm2_"))
    code = ("import moe_conform, sys\n"
            "def fn(case):\n"
            "    raise moe_conform.Skip('counting')\n"
            "for kw in (dict(filter='gemm2_*'), dict(expert_type='gemm2', filter='gemm*')):\n"
            "    moe_conform.run_suite(fn, sys.argv[1], **kw)\n")
    r = subprocess.run([sys.executable, "-c", code, suite], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = counters(r.stderr)
    n = len(selected)
    expect(r.returncode == 0 and n > 0 and seen == [(k, n) for k in range(1, n + 1)] * 2,
           f"progress counters for {n} selected cases: {seen[:3]}...{seen[-3:]} (rc {r.returncode})")

    # The repro line carries the selection.
    s = moe_conform.run_suite(skip_all, suite, expert_type="gemm3", filter=gemm3[0], quiet=True)
    expect("expert_type='GEMM3_SWIGLU'" in s.results[0].repro, f"repro {s.results[0].repro!r}")


def check_skip(suite, types, work, expect):
    def gemm3_kernel(case):
        if case.expert_type != "GEMM3_SWIGLU":
            raise moe_conform.Skip("this kernel is GEMM3_SWIGLU only")
        return np.zeros(case.inputs["hidden_states"].shape, np.float32)

    names = ["gemm3_qwen_openvino_f32", "gemm2_gptoss_spec_f32"]
    report, junit = os.path.join(work, "skip.json"), os.path.join(work, "skip.xml")
    s = moe_conform.run_suite(gemm3_kernel, suite, filter=names, quiet=True, json=report, junit=junit)
    by = {r.case: r for r in s.results}
    skipped = by["gemm2_gptoss_spec_f32"]
    expect(skipped.status == "SKIP" and skipped.reason == "not supported: this kernel is GEMM3_SWIGLU only",
           f"Skip -> {skipped.status} {skipped.reason!r}")
    expect(by["gemm3_qwen_openvino_f32"].status == "FAIL", "the other case still judged")
    expect(s.skipped == 1 and s.errors == 0 and s.exit_code == 1, f"counts {s.count_line}, exit {s.exit_code}")
    expect("not supported: this kernel is GEMM3_SWIGLU only" in s.report_text, "text report gives the reason")
    with open(report) as f:
        row = [r for r in json.load(f)["results"] if r["case"] == "gemm2_gptoss_spec_f32"][0]
    expect(row["status"] == "SKIP" and "GEMM3_SWIGLU only" in row["reason"], f"JSON {row['status']}")
    case = [c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name") == "gemm2_gptoss_spec_f32"][0]
    expect(case.find("skipped") is not None and case.find("error") is None, "JUnit <skipped/>")

    # Every case skipped (a bare Skip: a reason all the same): nothing compared, exit_code 77.
    def nothing(case):
        raise moe_conform.Skip()

    s = moe_conform.run_suite(nothing, suite, filter=names, quiet=True)
    expect(s.exit_code == 77 and s.skipped == 2, f"all SKIP: exit {s.exit_code}")
    expect(all(r.reason == "not supported: the function raised moe_conform.Skip" for r in s.results),
           f"bare Skip reason {s.results[0].reason!r}")
    expect(issubclass(moe_conform.Skip, Exception), "Skip is an Exception")


def check_cli(moe, suite, types, work, expect):
    # run --expert-type: the progress lines count the selected cases; the repro line carries it.
    gemm3 = sorted(n for n, t in types.items() if t == "GEMM3_SWIGLU")
    report = os.path.join(work, "run.json")
    r = subprocess.run([moe, "run", "--backend", "reference", "--suite", suite, "--expert-type", "GEMM3",
                        "--trust-stored-results", "--json", report],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with open(report) as f:
        results = json.load(f)["results"]
    expect(r.returncode == 0 and sorted(x["case"] for x in results) == gemm3, f"run --expert-type: rc {r.returncode}")
    n = len(gemm3)
    expect(counters(r.stderr) == [(k, n) for k in range(1, n + 1)], f"run counters {counters(r.stderr)[:3]}")
    expect(all("--expert-type GEMM3_SWIGLU" in x["repro"] for x in results), f"repro {results[0]['repro']}")
    r = subprocess.run([moe, "run", "--backend", "reference", "--suite", suite, "--expert-type", "gemm4"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    expect(r.returncode == 2 and "--expert-type" in r.stdout and "gemm4" in r.stdout, f"bad value: {r.stdout}")

    # check with results for one case: the others say what to do; --expert-type narrows it.
    one = "gemm3_qwen_openvino_f32"
    results_dir = os.path.join(work, "results")
    r = subprocess.run([moe, "run", "--quiet", "--backend", "reference", "--case", os.path.join(suite, one + ".h5"),
                        "--write-results", results_dir], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    expect(r.returncode == 0, f"write-results: {r.stdout[-500:]}")
    report = os.path.join(work, "check.json")
    r = subprocess.run([moe, "check", "--quiet", "--suite", suite, "--results", results_dir, "--filter", "gemm3_qwen_*",
                        "--json", report], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(report) as f:
        rows = {x["case"]: x for x in json.load(f)["results"]}
    missing = [x for name, x in rows.items() if name != one]
    expect(r.returncode == 1 and rows[one]["status"] == "PASS" and missing, f"check: rc {r.returncode}")
    expect(all(x["status"] == "ERROR" and "backend threw" not in x["reason"] and
               "give --case FILE... or --filter/--expert-type" in x["reason"] for x in missing),
           f"missing result reason {missing[0]['reason'] if missing else None!r}")
    expect("backend threw" not in r.stdout, "no 'backend threw' in check's text report")


def main():
    moe, suite, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    types = expert_types(suite)
    check_python_selection(suite, types, work, expect)
    check_skip(suite, types, work, expect)
    check_cli(moe, suite, types, work, expect)
    for f in failures:
        print("FAIL", f)
    print(f"kernel doors: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
