#!/usr/bin/python3
"""kill -9 during `moe-golden generate`: never a partial .h5, and no temporary file after the
next run; Ctrl-C, SIGTERM or SIGHUP during a write: the temporary file removed at once.

Usage: kill_during_generation.py MOE_GOLDEN MOE_CONFORM WORK_DIR

Generates a small catalogue of cases large enough (tens of MB each) that a write takes a while,
and kills the generator with SIGKILL at spread-out moments. After each kill, every *.h5 in the
output folder must be complete: h5py opens it and reads every dataset (write_golden writes a
temporary file and renames it). Then the temporary files the killed generators left behind must
be gone after the next `moe-golden generate` into that folder, and after `moe-conform run --suite`;
a temporary file whose writer is still alive (this script's own pid) must be left alone, and no
temporary file is ever run as a case.
"""
import glob
import json
import os
import signal
import subprocess
import sys
import time

import h5py

CASES = [
    {"name": "big_gemm3_%d" % i, "expert_type": "GEMM3_SWIGLU", "convention": "openvino", "tier": "quick",
     "shape": {"tokens": 16, "hidden": 512, "inter": 512, "experts": 8, "topk": 2}, "seed": 900 + i}
    for i in range(3)
]
KILLS = 12  # at 1/13, 2/13, ... 12/13 of the time a whole generation takes here


def temp_files(folder):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(folder, "*.tmp.*")))


def check_complete(folder):
    problems = []
    for path in sorted(glob.glob(os.path.join(folder, "*.h5"))):
        try:
            with h5py.File(path, "r") as f:
                assert f.attrs["format"] == "moe-golden"
                for group in ("inputs", "outputs"):
                    for name in f[group]:
                        f[group][name][()]
        except Exception as e:  # noqa: BLE001 - any failure is a partial file
            problems.append("%s: %r" % (os.path.basename(path), e))
    return problems


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    moe_golden, moe_conform, work = argv[1:]
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "suite")
    for p in glob.glob(os.path.join(out, "*")):
        os.remove(p)
    catalog = os.path.join(work, "catalog.json")
    with open(catalog, "w") as f:
        json.dump({"format": "moe-catalog", "format_version": 1, "cases": CASES}, f)
    generate = [moe_golden, "generate", "--catalog", catalog, "--out", out, "--tier", "quick", "--threads", "1"]

    failures = []
    seen_temp = set()
    start = time.monotonic()
    r = subprocess.run(generate, capture_output=True, text=True)
    whole = time.monotonic() - start
    print("a whole generation: %.2f s, exit %d" % (whole, r.returncode))
    if r.returncode != 0:
        failures.append("generate failed: " + r.stderr)
    for k in range(1, KILLS + 1):
        delay = whole * k / (KILLS + 1)
        p = subprocess.Popen(generate, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        left = temp_files(out)
        seen_temp.update(left)
        problems = check_complete(out)
        print("killed after %.2f s: %d complete .h5, temporary files %s%s" % (
            delay, len(glob.glob(os.path.join(out, "*.h5"))), left or "none",
            "; PARTIAL: " + "; ".join(problems) if problems else ""), flush=True)
        failures += problems
    if not seen_temp:
        failures.append("no kill left a temporary file: the test did not hit a write (make the cases larger)")

    # Ctrl-C, SIGTERM, SIGHUP while a case is being written: the writer removes its temporary
    # file before it ends (kill -9 cannot be caught; the next writer removes those).
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        for attempt in range(20):
            for p in glob.glob(os.path.join(out, "*")):
                os.remove(p)
            p = subprocess.Popen(generate, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            while p.poll() is None and not temp_files(out):
                time.sleep(0.001)
            if p.poll() is not None:
                p.communicate()
                continue  # finished before a write was seen: try again
            p.send_signal(sig)
            _, err = p.communicate()
            left = temp_files(out)
            # Said on stderr, not a silent end after a half-written progress line.
            if "interrupted: the file being written was removed" not in err:
                failures.append("%s: stderr does not say the write was interrupted: %r" % (sig.name, err[-300:]))
            print("%s during a write: exit %d, temporary files %s" % (sig.name, p.returncode, left or "none"))
            if left:
                failures.append("%s left %s" % (sig.name, left))
            if p.returncode != -sig:
                failures.append("%s: exit %d, expected death by the signal" % (sig.name, p.returncode))
            break
        else:
            failures.append("%s: no write was ever seen in progress" % sig.name)

    # A temporary file whose writer is alive (this process) stays; the killed writers' go.
    live = os.path.join(out, "big_gemm3_0.h5.tmp.%d.0" % os.getpid())
    open(live, "wb").close()
    r = subprocess.run(generate[:-2] + ["--filter", "big_gemm3_0"] + generate[-2:], capture_output=True, text=True)
    print("next generate: exit %d; %s" % (r.returncode, r.stderr.strip().splitlines()[0] if r.stderr else ""))
    if r.returncode != 0:
        failures.append("the next generate failed: " + r.stderr)
    left = temp_files(out)
    if left != [os.path.basename(live)]:
        failures.append("after the next generate, temporary files: %s (expected only the live writer's)" % left)

    # moe-conform run --suite removes them too, and never runs one as a case.
    dead = os.path.join(out, "big_gemm3_1.h5.tmp.%d.3" % 2 ** 22)  # above the default pid_max: never alive
    with open(dead, "wb") as f:
        f.write(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    r = subprocess.run([moe_conform, "run", "--quiet", "--backend", "reference", "--suite", out], capture_output=True,
                       text=True)
    print("moe-conform run --suite: exit %d; %s" % (r.returncode, r.stdout.strip().splitlines()[-1]))
    if r.returncode != 0:
        failures.append("moe-conform run --suite failed:\n" + r.stdout + r.stderr)
    if ".h5.tmp." in r.stdout:
        failures.append("a temporary file was run as a case:\n" + r.stdout)
    if os.path.exists(dead) or not os.path.exists(live):
        failures.append("after moe-conform run --suite, temporary files: %s" % temp_files(out))
    os.remove(live)

    for f in failures:
        print("FAIL " + f)
    print("kill_during_generation: %s" % ("ok" if not failures else "%d problem(s)" % len(failures)))
    for p in glob.glob(os.path.join(out, "*")):
        os.remove(p)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
