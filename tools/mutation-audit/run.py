#!/usr/bin/python3
"""Source-mutation audit: how many realistic bugs in the project's own source the suite catches.

selftest's mutants are bugs we chose to model behind a switch; this applies bugs to the real
kernel source instead, one at a time (a tail loop one short, a summation chain dropped, a zero
point's nibble or row wrong, a scale read in the wrong type...), rebuilds, and runs that backend
on a suite, or the table's checks. A mutant that passes is a hole: a bug of that kind would
ship. The mutants are JSON tables, one per area: cpu_kernels.json, cpu_int_dot.json and
cpu_pipeline.json (the cpu backend's decode kernels, its int8 dot kernels and their activations'
grid, and the pipeline around its GEMMs), opencl_kernels.json and
opencl_gpu_bodies.json (the opencl kernels on PoCL), simulators.json (blockwise,
expert_parallel), reference_and_spec.json (the reference and the spec library's element types),
conformance_judge.json (the comparison, verdicts and reports), result_check.json (moe-conform
check's result files) and case_selection.json (tiers, shards, globs). Each mutant replaces one
exact piece of text in one file, and one whose text is no longer found exactly once is reported
STALE, so a table cannot silently stop testing code that changed.

A table is a JSON object: "root" (the folder of the mutated files, from the repository root),
"target" (the build target, or a list of them, that the runs need), what judges a mutant (one of
the two below), optionally "environment" (variables for the runs), and "mutants", each with
"name", "file" (under root), "bug" (what it models), "old" and "new" (the exact text and its
replacement). What judges a mutant:
  "backend": the backend that `moe-conform run` runs on the suite; caught when a case fails.
  "checks": a list of commands, each {"name", "command": [argv]} ("{bin}" in an argument is the
    build's bin folder, "{suite}" the suite, "{tree}" the copy of the tree, "{work}" the scratch
    folder), run in order until one exits non-zero (or does not end within --timeout): caught by
    that one. For code that judges rather than computes (the comparison engine): its unit tests,
    then `moe-conform selftest`, whose deliberately broken backends a too lenient judge lets pass
    and whose correct ones a too strict judge fails.

The audit works on a copy of the working tree (git's tracked and untracked, not ignored, files)
in WORK/tree with its own release build in WORK/build, so the checkout is never touched. The
first build takes several minutes on two cores, each mutant a rebuild of one file and a run of the
suite (seconds to a few minutes: the opencl GPU bodies are built anew by PoCL on every run).

    tools/mutation-audit/run.py tools/mutation-audit/cpu_kernels.json
    tools/mutation-audit/run.py tools/mutation-audit/cpu_kernels.json --suite /tmp/my_suite --only dot_next_chunk_scales
    tools/mutation-audit/run.py tools/mutation-audit/cpu_kernels.json --check    # the table against the source, no build
    tools/mutation-audit/run.py tools/mutation-audit/conformance_judge.json       # the judge: unit tests, then selftest

Exit: 0 every mutant caught; 1 a mutant survived; 2 a usage or setup error, a STALE mutant, a
mutant that does not build, a run that ends without a report, or a baseline (unmutated) run that
does not pass. A run that does not end within --timeout counts as caught (a hang fails a CI too).
"""
import argparse
import fcntl
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[2]


def fail(msg):
    print("mutation-audit: error: " + msg, file=sys.stderr)
    sys.exit(2)


def load_table(path):
    try:
        table = json.loads(pathlib.Path(path).read_text())
        if not isinstance(table, dict) or "mutants" not in table:
            raise ValueError("not a mutant table (a JSON object with a key 'mutants')")
        mutants = table["mutants"]
        if not isinstance(mutants, list) or not all(isinstance(m, dict) for m in mutants):
            raise ValueError("key 'mutants' must be a list of objects")
        if not isinstance(table.get("root"), str):
            raise ValueError("key 'root' must be a string")
        target = table.get("target")
        if isinstance(target, str):
            table["target"] = [target]
        elif not (isinstance(target, list) and target and all(isinstance(t, str) and t for t in target)):
            raise ValueError("key 'target' must be a build target or a non-empty list of them")
        if ("backend" in table) == ("checks" in table):
            raise ValueError("a table names either a 'backend' to run on the suite or 'checks' to run, not %s" %
                             ("both" if "backend" in table else "neither"))
        if "backend" in table and not isinstance(table["backend"], str):
            raise ValueError("key 'backend' must be a string")
        if "checks" in table:
            checks = table["checks"]
            if not (isinstance(checks, list) and checks and all(
                    isinstance(c, dict) and isinstance(c.get("name"), str) and c["name"] and
                    isinstance(c.get("command"), list) and c["command"] and
                    all(isinstance(a, str) for a in c["command"]) for c in checks)):
                raise ValueError("key 'checks' must be a non-empty list of objects with a 'name' and a "
                                 "'command' (a non-empty list of strings)")
        env = table.get("environment", {})
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise ValueError("key 'environment' must map variable names to strings")
        names = set()
        for i, m in enumerate(mutants):
            for key in ("name", "file", "bug", "old", "new"):
                if not isinstance(m.get(key), str) or not m[key]:
                    raise ValueError("mutants[%d]: key %r must be a non-empty string" % (i, key))
            if m["name"] in names:
                raise ValueError("mutants[%d]: the name %r comes twice" % (i, m["name"]))
            if m["old"] == m["new"]:
                raise ValueError("mutants[%d] (%s): old and new are the same text" % (i, m["name"]))
            names.add(m["name"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail("%s: %s" % (path, e))
    return table


def stale(table, root):
    """The mutants whose text does not occur exactly once in their file under root: (name, why)."""
    out = []
    for m in table["mutants"]:
        path = root / table["root"] / m["file"]
        count = path.read_text().count(m["old"]) if path.is_file() else -1
        if count != 1:
            out.append((m["name"], "%s %s" % (pathlib.Path(table["root"]) / m["file"],
                                              "does not exist" if count < 0 else "holds its text %d times" % count)))
    return out


def copy_tree(work):
    """The working tree's files (tracked, and untracked but not ignored) into WORK/tree."""
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           check=True, capture_output=True).stdout.split(b"\0")
    tree = work / "tree"
    for name in files:
        if not name:
            continue
        src = REPO / os.fsdecode(name)
        if not src.is_file():
            continue  # deleted in the working tree
        dst = tree / os.fsdecode(name)
        data = src.read_bytes()
        if not dst.exists() or dst.read_bytes() != data:  # unchanged files keep their times: no rebuild
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(data)
    return tree


def build(work, targets, log):
    if not (work / "build" / "CMakeCache.txt").exists():
        with open(log, "w") as out:
            if subprocess.run(["cmake", "-S", str(work / "tree"), "-B", str(work / "build"),
                               "-DCMAKE_BUILD_TYPE=Release"], stdout=out, stderr=subprocess.STDOUT).returncode:
                return False
    with open(log, "a") as out:
        return subprocess.run(["cmake", "--build", str(work / "build"), "-j", str(os.cpu_count() or 2), "--target", *targets],
                              stdout=out, stderr=subprocess.STDOUT).returncode == 0


def run_suite(work, backend, suite, report, timeout, env):
    """The failing cases (FAIL or ERROR) of one run, and its exit code. `env`: the table's
    variables (say, MOE_OPENCL_GEMM=wide to run the opencl backend's GPU kernel bodies on PoCL)."""
    cmd = [str(work / "build" / "bin" / "moe-conform"), "run", "--backend", backend, "--suite", str(suite),
           "--quiet", "--json", str(report)]
    try:
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout,
                            env=dict(os.environ, **env)).returncode
    except subprocess.TimeoutExpired:
        return None, "timeout"
    try:
        results = json.loads(report.read_text())["results"]
    except (OSError, ValueError, KeyError):
        return None, rc
    return sorted({r["case"] for r in results if r["status"] in ("FAIL", "ERROR")}), rc


def run_checks(work, checks, suite, log, timeout, env):
    """The name of the first check that fails (exits non-zero or does not end within `timeout`), with
    what it says of itself, or None when every check passes. Each check's output goes to `log`."""
    with open(log, "w") as out:
        for check in checks:
            argv = [a.replace("{bin}", str(work / "build" / "bin")).replace("{suite}", str(suite))
                    .replace("{tree}", str(work / "tree")).replace("{work}", str(work)) for a in check["command"]]
            out.write("$ %s\n" % " ".join(argv))
            out.flush()
            try:
                rc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                                    env=dict(os.environ, **env)).returncode
            except subprocess.TimeoutExpired:
                return check["name"], "did not end within %g s" % timeout
            except OSError as e:
                return check["name"], "could not start: %s" % e
            if rc != 0:
                return check["name"], "exit %d" % rc
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table", help="the mutant table (JSON), e.g. tools/mutation-audit/cpu_kernels.json")
    ap.add_argument("--suite", default=str(REPO / "data" / "golden"), help="golden folder to run (default: the bundled suite)")
    ap.add_argument("--work", default="/tmp/moe-mutation-audit",
                    help="scratch folder for the tree copy and its build, kept between runs (default: %(default)s)")
    ap.add_argument("--only", default="", help="comma-separated mutant names to run (default: all)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds one run of the suite, or one check, may take (default: 900)")
    ap.add_argument("--check", action="store_true",
                    help="only check that every mutant's text occurs exactly once in the source (no copy, no build)")
    args = ap.parse_args()
    # A kill restores the mutated file as Ctrl-C does (the finally below); the next run's copy of the
    # tree would repair it anyway.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    table = load_table(args.table)
    suite = pathlib.Path(args.suite).resolve()
    if not suite.is_dir():
        fail("--suite %s is not a folder" % suite)
    mutants = table["mutants"]
    if args.only:
        wanted = [n for n in args.only.split(",")]
        unknown = [n for n in wanted if n not in {m["name"] for m in mutants}]
        if unknown or not all(wanted):
            fail("--only names no mutant of %s: %s" % (args.table, ", ".join(repr(n) for n in unknown or [""])))
        mutants = [m for m in mutants if m["name"] in wanted]
    # Before minutes of building: a mutant whose text the source no longer holds exactly once
    # would test nothing (or the wrong line).
    gone = stale(dict(table, mutants=mutants), REPO)
    for name, why in gone:
        print("mutation-audit: STALE %s: %s" % (name, why), file=sys.stderr)
    if gone:
        fail("%d of %d mutants of %s are stale: update or drop them" % (len(gone), len(mutants), args.table))
    if args.check:
        print("mutation-audit: %d mutants of %s, each text found once in %s" % (len(mutants), args.table, table["root"]))
        return
    work = pathlib.Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    # One audit a WORK folder: two would apply their mutants to the same copy of the tree, each
    # restoring the other's mutant as its pristine text, and build and judge each other's bugs.
    lock = open(work / "audit.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fail("another audit is using --work %s; wait for it, or give this one its own --work" % work)

    print("mutation-audit: copying the working tree to %s and building %s (the first build takes minutes)" %
          (work / "tree", " ".join(table["target"])), file=sys.stderr)
    tree = copy_tree(work)
    root = tree / table["root"]
    if not build(work, table["target"], work / "build.log"):
        fail("the unmutated tree does not build; see %s" % (work / "build.log"))
    env = table.get("environment", {})
    if "checks" in table:
        failed = run_checks(work, table["checks"], suite, work / "baseline.log", args.timeout, env)
        if failed:
            fail("unmutated, check %s fails (%s; see %s): nothing to measure" % (failed[0], failed[1], work / "baseline.log"))
    else:
        failing, rc = run_suite(work, table["backend"], suite, work / "baseline.json", args.timeout, env)
        if failing is None or failing or rc != 0:
            fail("the unmutated %s backend does not pass %s (exit %s%s): nothing to measure" %
                 (table["backend"], suite, rc, "; failing: " + ", ".join(failing[:5]) if failing else ""))

    rows, worst = [], 0
    for i, m in enumerate(mutants, 1):
        path = root / m["file"]
        pristine = path.read_text() if path.is_file() else ""
        count = pristine.count(m["old"])
        t0 = time.time()
        if count != 1:
            verdict, detail, worst = "STALE", "its text occurs %d times in %s" % (count, m["file"]), 2
        else:
            line = pristine[:pristine.index(m["old"])].count("\n") + 1
            try:
                path.write_text(pristine.replace(m["old"], m["new"]))
                if not build(work, table["target"], work / ("%s.build.log" % m["name"])):
                    verdict, detail, worst = "NO-BUILD", "see %s" % (work / ("%s.build.log" % m["name"])), 2
                elif "checks" in table:
                    log = work / ("%s.log" % m["name"])
                    failed = run_checks(work, table["checks"], suite, log, args.timeout, env)
                    if failed:
                        verdict, detail = "caught", "by %s (%s; %s)" % (failed[0], failed[1], log)
                    else:
                        verdict, detail, worst = "SURVIVED", "every check passes", max(worst, 1)
                else:
                    failing, rc = run_suite(work, table["backend"], suite, work / ("%s.json" % m["name"]), args.timeout, env)
                    if failing:
                        verdict = "caught"
                        detail = "%d case(s): %s%s" % (len(failing), ", ".join(failing[:3]), ", ..." if len(failing) > 3 else "")
                    elif failing is None and rc == "timeout":  # a hang: a CI gate fails on it too
                        verdict, detail = "caught", "the run did not end within %g s" % args.timeout
                    elif failing is None:  # moe-conform itself failed (exit 2 or 3): no verdict on the mutant
                        verdict, detail, worst = "NO-REPORT", "the run ended without a report (exit %s)" % rc, 2
                    else:
                        verdict, detail, worst = "SURVIVED", "every case passes", max(worst, 1)
            finally:
                path.write_text(pristine)
            detail = "%s:%d; %s" % (m["file"], line, detail)
        rows.append((m["name"], verdict, detail, m["bug"]))
        print("mutation-audit: [%d/%d] %s: %s (%s) %.0f s" % (i, len(mutants), m["name"], verdict, detail, time.time() - t0),
              file=sys.stderr, flush=True)

    width = max(len(r[0]) for r in rows) if rows else 0
    for name, verdict, detail, bug in rows:
        print("  %-*s  %-8s  %s\n  %-*s            %s" % (width, name, verdict, bug, width, "", detail))
    caught = sum(1 for r in rows if r[1] == "caught")
    print("mutation-audit: %d of %d source mutants of %s caught on %s" % (caught, len(rows), table["root"], suite))
    sys.exit(worst)


if __name__ == "__main__":
    main()
