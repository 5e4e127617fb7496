#!/usr/bin/python3
"""Checks a moe-conform selftest JSON document (spec/report-format.md, "Selftest JSON") against
its schema (spec/selftest.schema.json) and against itself, without moe-conform's code.

Usage: check_selftest_json.py SELFTEST.json SCHEMA.json [--expect-mutants N]

Checks: the document validates; every row of the catch matrix has one status per case (or none,
for an unavailable backend); a mutant's caught_by counts its FAIL and ERROR cells and caught says
caught_by > 0; the score counts the caught and runnable mutants and value = caught / runnable;
passed agrees with the score and the correct backends' clean flags; no correct backend has a
FAIL or ERROR cell unless listed in its problems. Prints "PASS: ..." or "FAIL: ...: why" per
check and exits 0 when all passed, 1 otherwise.
"""
import argparse
import json
import sys

import jsonschema


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("selftest")
    ap.add_argument("schema")
    ap.add_argument("--expect-mutants", type=int)
    a = ap.parse_args()
    doc = json.load(open(a.selftest))
    results = []

    def check(name, ok, why=""):
        results.append(ok)
        print(("PASS: " if ok else "FAIL: ") + name + ("" if ok else ": " + why))

    try:
        jsonschema.validate(doc, json.load(open(a.schema)))
        check("schema", True)
    except jsonschema.ValidationError as e:
        check("schema", False, e.message)
        return 1
    n = len(doc["cases"])
    rows = doc["correct"] + doc["mutants"]
    bad = [r.get("name", r.get("backend")) for r in rows
           if len(r["statuses"]) not in (0, n) or len(r["worst_ratios"]) != len(r["statuses"])]
    check("every row has one cell per case", not bad, str(bad))
    bad = [m["name"] for m in doc["mutants"]
           if m["caught_by"] != sum(s in ("FAIL", "ERROR") for s in m["statuses"]) or m["caught"] != (m["caught_by"] > 0)]
    check("caught_by counts the FAIL and ERROR cells", not bad, str(bad))
    runnable = [m for m in doc["mutants"] if m["unavailable"] is None]
    caught = [m for m in runnable if m["caught"]]
    s = doc["score"]
    check("the score counts the mutants", s["caught"] == len(caught) and s["runnable"] == len(runnable)
          and s["skipped"] == len(doc["mutants"]) - len(runnable), str(s))
    check("score value = caught / runnable",
          abs(s["value"] - (len(caught) / len(runnable) if runnable else 0.0)) < 1e-12, str(s["value"]))
    clean = all(c["clean"] or c["unavailable"] is not None for c in doc["correct"])
    check("passed agrees with the score and the correct backends",
          doc["passed"] == (clean and s["caught"] == s["runnable"]), str(doc["passed"]))
    bad = [c["backend"] for c in doc["correct"]
           if sum(x in ("FAIL", "ERROR", "XPASS") for x in c["statuses"]) != len(c["problems"])]
    check("a correct backend's problems are its cells that are not PASS, SKIP or MISTRUSTED", not bad, str(bad))
    if a.expect_mutants is not None:
        check("mutant count", len(doc["mutants"]) == a.expect_mutants,
              "%d, expected %d" % (len(doc["mutants"]), a.expect_mutants))
    print("%d passed, %d failed" % (sum(results), len(results) - sum(results)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
