"""moe-bench's timed rows, read from its --json file without our code: a data type's plain row and
its compressed rows are timed together (round by round), printed plain rows first, and each
compressed row carries the plain bf16 and f32 times of the same shape and T it is compared with; a
progress line per data type goes to stderr. Every file validates against spec/bench.schema.json
(jsonschema), and each row's run times are its --reps repetitions around its median.

Usage: check_bench_rows.py MOE_BENCH OUT_DIR
"""
import json
import os
import subprocess
import sys

import jsonschema

SCHEMA = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "spec",
                                     "bench.schema.json")))


def rows_of(json_file, reps):
    """The rows of a --json file, checked against the schema and for the spread of their runs."""
    rows = json.load(open(json_file))
    jsonschema.validate(rows, SCHEMA)
    for r in rows:
        runs = r["run_seconds"]
        if len(runs) != reps or r["min_seconds"] != min(runs) or r["max_seconds"] != max(runs):
            sys.exit(f"row {r['dtype']} {r['weights']}: run_seconds {runs}, min {r['min_seconds']}, "
                     f"max {r['max_seconds']}; expected {reps} runs and their extremes")
        if not r["min_seconds"] <= r["median_seconds"] <= r["max_seconds"]:
            sys.exit(f"row {r['dtype']} {r['weights']}: median {r['median_seconds']} outside its runs {runs}")
    return rows


def main():
    bench, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    json_file = os.path.join(out_dir, "rows.json")
    done = subprocess.run([bench, "--tokens", "1", "--experts", "4", "--topk", "2", "--hidden", "256", "--inter", "128",
                           "--dtype", "bf16,f32", "--weights", "u4,mxfp4", "--reps", "2", "--json", json_file],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"moe-bench exited {done.returncode}: {done.stderr}")
    # Progress on stderr, one line per data type before its problems are made (stdout keeps the table).
    progress = [line for line in done.stderr.splitlines() if "making the problems" in line]
    expected_progress = ["moe-bench: custom, T = 1: making the problems (bf16, bf16 u4, bf16 mxfp4), then 2 timed rounds",
                         "moe-bench: custom, T = 1: making the problems (f32, f32 u4, f32 mxfp4), then 2 timed rounds"]
    if progress != expected_progress:
        sys.exit(f"progress lines {progress}, expected {expected_progress}")
    if "making the problems" in done.stdout:
        sys.exit("progress lines on stdout, which holds the table")
    rows = rows_of(json_file, 2)
    order = [(r["dtype"], r["weights"]) for r in rows]  # a plain row's weights: its data type
    expected = [("bf16", "bf16"), ("f32", "f32"), ("bf16", "u4/g128"), ("bf16", "mxfp4"), ("f32", "u4/g128"),
                ("f32", "mxfp4")]
    if order != expected:
        sys.exit(f"rows {order}, expected {expected}")
    plain = {r["dtype"]: r["median_seconds"] for r in rows if r["weights"] == r["dtype"]}
    for r in rows:
        if not r["median_seconds"] > 0:
            sys.exit(f"row {r['dtype']} {r['weights']}: median_seconds {r['median_seconds']}")
        if r["weights"] != r["dtype"] and (r["bf16_seconds"] != plain["bf16"] or r["f32_seconds"] != plain["f32"]):
            sys.exit(f"row {r['dtype']} {r['weights']}: compared with {r['bf16_seconds']} / {r['f32_seconds']}, "
                     f"the plain rows took {plain['bf16']} / {plain['f32']}")
    speedups = [line for line in done.stdout.splitlines() if "x vs bf16" in line]
    if len(speedups) != 4:
        sys.exit(f"{len(speedups)} printed rows with a speedup, expected 4:\n{done.stdout}")
    # The opencl backend's rows (PoCL here): the JSON holds the table's device-time figures beside
    # the wall-time ones, and the copy kernel's rate under its own name.
    ocl_file = os.path.join(out_dir, "opencl.json")
    done = subprocess.run([bench, "--backend", "opencl", "--tokens", "1", "--experts", "4", "--topk", "2", "--hidden",
                           "256", "--inter", "128", "--reps", "2", "--json", ocl_file], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"moe-bench --backend opencl exited {done.returncode}: {done.stderr}")
    for r in rows_of(ocl_file, 2):
        if "read_gbs" in r or not r.get("copy_gbs", 0) > 0:
            sys.exit(f"opencl row: read_gbs {r.get('read_gbs')}, copy_gbs {r.get('copy_gbs')}")
        dev = r["device_seconds"]
        want = r["gflops"] * r["median_seconds"] / dev
        if not (dev > 0 and abs(r["device_gflops"] - want) <= 1e-9 * want):
            sys.exit(f"opencl row: device_gflops {r['device_gflops']}, expected {want} (device time {dev} s)")
        if abs(r["device_gbs"] - r["weight_gb"] / dev) > 1e-9 * r["device_gbs"]:
            sys.exit(f"opencl row: device_gbs {r['device_gbs']}, expected {r['weight_gb'] / dev}")
        # The table prints the device figures: the GFLOP/s column is device_gflops as the table writes
        # its figures, 3 significant digits below 10 and one decimal from 10 up (a rate of 15.0 is
        # printed "15.0", which the 3-digit form "15" once failed to find).
        line = next(l for l in done.stdout.splitlines() if l.startswith("custom"))
        g = r["device_gflops"]
        shown = f"{g:.3g}" if abs(g) < 10 else f"{g:.1f}"
        if shown not in line.split():
            sys.exit(f"the table's row {line!r} does not show device_gflops {shown}")
    print(f"{len(rows)} rows in order, the compressed ones against the plain rows of their run; "
          "opencl rows with their device-time figures")


if __name__ == "__main__":
    main()
