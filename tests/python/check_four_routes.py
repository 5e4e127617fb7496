#!/usr/bin/env python3
"""One computation, four routes, identical verdicts: loop_f32 as a built-in backend; its outputs
written as result files and judged by `moe-conform check`; the same loops as the example C plugin;
and as a Python function through moe_conform.run_suite. Every case must get the same status and
the same metrics in the four JSON reports, compressed cases included (the plugin speaks backend
ABI version 2 and dequantises in C).

usage: check_four_routes.py MOE_CONFORM PLUGIN.so SUITE WORK_DIR   (PYTHONPATH: build/python)
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import moe_conform  # noqa: E402
from loop_f32_mirror import loop_f32  # noqa: E402


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-3000:]}")


def results(path):
    with open(path) as f:
        return {r["case"]: r for r in json.load(f)["results"]}


def main():
    moe, plugin, suite, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    j = {name: os.path.join(work, name + ".json") for name in ("builtin", "check", "plugin", "python")}
    run([moe, "run", "--quiet", "--backend", "loop_f32", "--suite", suite, "--json", j["builtin"],
         "--write-results", os.path.join(work, "results")])
    run([moe, "check", "--quiet", "--suite", suite, "--results", os.path.join(work, "results"), "--json", j["check"]])
    run([moe, "run", "--quiet", "--backend-lib", plugin, "--suite", suite, "--json", j["plugin"]])
    summary = moe_conform.run_suite(loop_f32, suite, compute="f32", json=j["python"], name="loop_f32", quiet=True)
    if summary.exit_code != 0:
        sys.exit("run_suite: " + summary.count_line)

    reference = results(j["builtin"])
    problems = 0
    for route in ("check", "plugin", "python"):
        got = results(j[route])
        if set(got) != set(reference):
            sys.exit(f"{route}: cases differ: {sorted(set(got) ^ set(reference))}")
        for case, want in reference.items():
            have = got[case]
            if have["status"] != want["status"] or have["metrics"] != want["metrics"]:
                problems += 1
                print(f"{route} {case}: {have['status']} {have['metrics']} != {want['status']} {want['metrics']}")
    statuses = {}
    for r in reference.values():
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    print(f"{len(reference)} cases x 4 routes; statuses {statuses}; {problems} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
