#!/usr/bin/python3
"""tools/mutation-audit/run.py without building anything: every committed table matches today's
source (--check), and a table that no longer does, or a bad call, is refused (exit 2, named)
before the minutes of copying and building a run would take."""
import fcntl
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUN = ROOT / "tools" / "mutation-audit" / "run.py"
TABLE = ROOT / "tools" / "mutation-audit" / "cpu_kernels.json"
failures = []


def run(*args):
    p = subprocess.run([sys.executable, str(RUN), *map(str, args)], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def expect(what, ok):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


for table_file in sorted(TABLE.parent.glob("*.json")):
    rc, out = run(table_file, "--check")
    expect("%s: every text occurs once in the source: %s" % (table_file.name, out.strip()),
           rc == 0 and "each text found once" in out)

table = json.loads(TABLE.read_text())
with tempfile.TemporaryDirectory() as tmp:
    stale = json.loads(json.dumps(table))
    stale["mutants"][1]["old"] += " /* gone */"
    stale["mutants"][2]["file"] = "no_such_kernel.cpp"
    path = pathlib.Path(tmp) / "stale.json"
    path.write_text(json.dumps(stale))
    rc, out = run(path, "--check")
    expect("a stale table is refused naming both mutants",
           rc == 2 and "STALE " + stale["mutants"][1]["name"] in out and "STALE " + stale["mutants"][2]["name"] in out
           and "2 of %d mutants" % len(stale["mutants"]) in out)
    # Without --check too: refused before any copy or build (the scratch folder stays empty).
    work = pathlib.Path(tmp) / "work"
    rc, out = run(path, "--work", work)
    expect("a stale table is refused before the tree is copied", rc == 2 and not (work / "tree").exists())

    twice = json.loads(json.dumps(table))
    twice["mutants"].append(dict(twice["mutants"][0]))
    path.write_text(json.dumps(twice))
    rc, out = run(path, "--check")
    expect("a name twice is refused", rc == 2 and "comes twice" in out)

    for bad, why in (([1], "not a mutant table"), (dict(table, mutants={"a": 1}), "must be a list of objects")):
        path.write_text(json.dumps(bad))
        rc, out = run(path, "--check")
        expect("a table of the wrong shape is refused (%s)" % why, rc == 2 and why in out and "Traceback" not in out)

    # A table is judged either by a backend on the suite or by its checks: both, neither, or checks
    # of the wrong shape are refused by name.
    judge = json.loads((TABLE.parent / "conformance_judge.json").read_text())
    for bad, why, what in ((dict(table, checks=judge["checks"]), "not both", "a backend and checks"),
                           ({k: v for k, v in table.items() if k != "backend"}, "not neither", "neither"),
                           (dict(judge, checks=[{"name": "selftest"}]), "key 'checks' must be a non-empty list",
                            "a check without a command"),
                           (dict(judge, target=[]), "key 'target' must be a build target", "no build target")):
        path.write_text(json.dumps(bad))
        rc, out = run(path, "--check")
        expect("a table with %s is refused (%s)" % (what, why), rc == 2 and why in out and "Traceback" not in out)

    same = json.loads(json.dumps(table))
    same["mutants"][0]["new"] = same["mutants"][0]["old"]
    path.write_text(json.dumps(same))
    rc, out = run(path, "--check")
    expect("a mutant that changes nothing is refused", rc == 2 and "the same text" in out)

rc, out = run(TABLE, "--only", "no_such_mutant", "--check")
expect("--only with an unknown name is refused, naming it", rc == 2 and "'no_such_mutant'" in out)
rc, out = run(TABLE, "--suite", "/nonexistent/suite", "--check")
expect("a --suite that is not a folder is refused", rc == 2 and "/nonexistent/suite" in out)

# A second audit on a --work folder that one is using is refused before it touches the copy: two
# would mutate the same tree (each restoring the other's mutant as pristine) and judge the wrong
# bugs. The lock is held here as a running audit holds it.
with tempfile.TemporaryDirectory() as tmp:
    work = pathlib.Path(tmp) / "work"
    work.mkdir()
    with open(work / "audit.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        rc, out = run(TABLE, "--work", work, "--suite", tmp)
    expect("an audit on a --work folder in use is refused before copying the tree: %s" % out.strip()[-120:],
           rc == 2 and "another audit is using --work" in out and not (work / "tree").exists())

sys.exit(1 if failures else 0)
