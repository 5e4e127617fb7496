#!/usr/bin/env python3
"""A catalogue is untrusted input: mutated catalogues through `moe-golden generate`, each of which
must end with exit 0 or 2 (a message), never a crash, a hang (60 s) or an internal error (3).

Each run takes one case of the bundled catalogue and changes one to four of its values, keys or
list items (numbers at the edges of every type, strings, nulls, empty and nested containers),
now and then at the catalogue's top level. The files of catalog-regressions/ (catalogues that
once crashed the generator) run first. A failing catalogue is kept in WORK_DIR and named.

usage: catalog_fuzz.py MOE_GOLDEN CATALOG WORK_DIR [--seconds S] [--seed N]
"""
import argparse
import copy
import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

# Copied where used: a shared list or dict, mutated later, would change this list (and could hold
# itself).
VALUES = [0, -1, 1, 2**31, 2**63, -2**63, 2**64, 10**30, 1.5, -0.0, 1e308, -1e308, 5e-324, "", "x", "nan",
          None, True, [], {}, [1, 2], {"a": 1}, "../../etc", "a/b", "\u0000", "\u202e"]


def mutate(rng, node, depth=0):
    if isinstance(node, dict) and node:
        key = rng.choice(sorted(node))
        r = rng.random()
        if r < 0.15:
            del node[key]
        elif r < 0.55 and depth < 6 and isinstance(node[key], (dict, list)):
            mutate(rng, node[key], depth + 1)
        else:
            node[key] = copy.deepcopy(rng.choice(VALUES))
    elif isinstance(node, list) and node:
        i = rng.randrange(len(node))
        r = rng.random()
        if r < 0.1:
            del node[i]
        elif r < 0.6 and isinstance(node[i], (dict, list)):
            mutate(rng, node[i], depth + 1)
        else:
            node[i] = copy.deepcopy(rng.choice(VALUES))


def generate(moe_golden, catalog, out):
    shutil.rmtree(out, ignore_errors=True)
    try:
        p = subprocess.run([moe_golden, "generate", "--catalog", str(catalog), "--out", str(out), "--tier", "full",
                            "--max-memory", "256M", "--threads", "1"], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "a hang (60 s)"
    if p.returncode in (0, 2):
        return None
    last = (p.stderr.strip().splitlines() or [""])[-1]
    return f"exit {p.returncode}: {last[:300]}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("moe_golden")
    ap.add_argument("catalog")
    ap.add_argument("work")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    failures = []
    for regression in sorted((Path(__file__).parent / "catalog-regressions").glob("*.json")):
        why = generate(a.moe_golden, regression, work / "out")
        if why:
            failures.append(f"{regression}: {why}")
    base = json.loads(Path(a.catalog).read_text())
    rng = random.Random(a.seed)
    runs = 0
    deadline = time.monotonic() + a.seconds
    while time.monotonic() < deadline:
        catalog = copy.deepcopy(base)
        case = copy.deepcopy(rng.choice(base["cases"]))
        catalog["cases"] = [case]
        for _ in range(rng.randint(1, 4)):
            mutate(rng, case if rng.random() < 0.9 else catalog)
        path = work / "catalog.json"
        path.write_text(json.dumps(catalog))
        runs += 1
        why = generate(a.moe_golden, path, work / "out")
        if why:
            kept = work / f"failure-{a.seed}-{runs}.json"
            path.rename(kept)
            failures.append(f"{kept}: {why}")
    print(f"catalog_fuzz: {runs} mutated catalogues in {a.seconds:.0f} s (seed {a.seed}), "
          f"{len(failures)} failure(s)")
    for f in failures:
        print("  " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
