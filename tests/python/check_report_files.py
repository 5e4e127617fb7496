#!/usr/bin/python3
"""Checks a pair of moe-conform reports against each other and against the schema
(spec/report-format.md, spec/report.schema.json), without moe-conform's code.

Usage: check_report_files.py REPORT.json REPORT.xml SCHEMA.json [--expect-total N]

Checks: the JSON report validates against the JSON schema (jsonschema); its summary agrees with
its results; the JUnit XML parses (xml.etree.ElementTree); the JUnit counts (tests, failures,
errors, skipped), per <testsuite> and on the <testsuites> root, agree with the JSON results and
summary; the suites come in the documented order; and every <testcase> corresponds to exactly
one JSON result (same backend, case, file and status) and vice versa.

Prints one line per check ("PASS: ..." or "FAIL: ...: why") and a final "N passed, M failed".
Exits 0 when every check passed, 1 otherwise, 2 on a usage error.
"""
import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter

import jsonschema

STATUSES = ("PASS", "FAIL", "SKIP", "XFAIL", "XPASS", "MISTRUSTED", "ERROR")
SUMMARY_KEYS = {  # summary field -> status it counts
    "passed": "PASS",
    "failed": "FAIL",
    "skipped": "SKIP",
    "xfail": "XFAIL",
    "xpass": "XPASS",
    "mistrusted": "MISTRUSTED",
    "errors": "ERROR",
}
# JUnit kind of each status: which child element a <testcase> carries.
JUNIT_KIND = {
    "PASS": None,
    "FAIL": "failure",
    "XPASS": "failure",
    "ERROR": "error",
    "SKIP": "skipped",
    "XFAIL": "skipped",
    "MISTRUSTED": "skipped",
}
SUITE_PREFIX = "moe-conform."
# What names the flag in a MISTRUSTED <failure>'s message, when the run was given it.
FAIL_ON_MISTRUSTED = "--fail-on-mistrusted"


def junit_kind(status, fail_on_mistrusted):
    """The child element of a <testcase> of this status: a MISTRUSTED result that fails the run
    (the JSON's fail_on_mistrusted) is a <failure>, as a FAIL is."""
    if status == "MISTRUSTED" and fail_on_mistrusted:
        return "failure"
    return JUNIT_KIND.get(status, "unknown")


class Checker:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, why=""):
        if ok:
            self.passed += 1
            print(f"PASS: {name}")
        else:
            self.failed += 1
            print(f"FAIL: {name}" + (f": {why}" if why else ""))
        return ok


def junit_counts(statuses, fail_on_mistrusted=False):
    """tests, failures, errors, skipped for a list of JSON status names."""
    c = Counter(junit_kind(s, fail_on_mistrusted) for s in statuses)
    return {
        "tests": len(statuses),
        "failures": c["failure"],
        "errors": c["error"],
        "skipped": c["skipped"],
    }


def attr_counts(element):
    out = {}
    for key in ("tests", "failures", "errors", "skipped"):
        value = element.get(key)
        try:
            out[key] = int(value)
        except (TypeError, ValueError):
            out[key] = value
    return out


def testcase_kind(tc):
    kinds = [child.tag for child in tc if child.tag in ("failure", "error", "skipped")]
    if len(kinds) > 1:
        return "several: " + ",".join(kinds)
    return kinds[0] if kinds else None


def testcase_status(tc):
    for props in tc.findall("properties"):
        for p in props.findall("property"):
            if p.get("name") == "status":
                return p.get("value")
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json_report")
    parser.add_argument("junit_report")
    parser.add_argument("schema")
    parser.add_argument("--expect-total", type=int, default=None)
    args = parser.parse_args()

    c = Checker()

    # --- JSON report and schema ---------------------------------------------------------------
    report = None
    try:
        with open(args.json_report, encoding="utf-8") as f:
            report = json.load(f)
        c.check(f"JSON report {args.json_report} parses", True)
    except (OSError, ValueError) as e:
        c.check(f"JSON report {args.json_report} parses", False, str(e))

    schema = None
    try:
        with open(args.schema, encoding="utf-8") as f:
            schema = json.load(f)
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        c.check(f"schema {args.schema} is a valid {cls.__name__} schema", True)
    except (OSError, ValueError, jsonschema.exceptions.SchemaError) as e:
        c.check(f"schema {args.schema} loads", False, str(e).splitlines()[0] if str(e) else repr(e))
        schema = None

    schema_ok = False
    if report is not None and schema is not None:
        validator = jsonschema.validators.validator_for(schema)(schema)
        errors = sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))
        why = "; ".join(f"at /{'/'.join(str(p) for p in e.absolute_path)}: {e.message}" for e in errors[:5])
        if len(errors) > 5:
            why += f"; ... {len(errors) - 5} more"
        schema_ok = c.check("JSON report validates against the schema", not errors, why)
    elif report is not None:
        c.check("JSON report validates against the schema", False, "no usable schema")

    # Everything below needs the structure the schema guarantees.
    results = None
    if report is not None and schema_ok:
        results = report["results"]
        summary = report["summary"]
        statuses = [r["status"] for r in results]
        counted = Counter(statuses)
        expected_summary = {k: counted[s] for k, s in SUMMARY_KEYS.items()}
        expected_summary["total"] = len(results)
        diffs = [f"{k}={summary[k]} but results give {v}" for k, v in expected_summary.items() if summary[k] != v]
        c.check("JSON summary agrees with the JSON results", not diffs, "; ".join(diffs))
        if args.expect_total is not None:
            c.check(f"JSON report has {args.expect_total} results", len(results) == args.expect_total,
                    f"it has {len(results)}")

    # --- JUnit XML ----------------------------------------------------------------------------
    root = None
    try:
        root = ET.parse(args.junit_report).getroot()
        c.check(f"JUnit report {args.junit_report} parses", True)
    except (OSError, ET.ParseError) as e:
        c.check(f"JUnit report {args.junit_report} parses", False, str(e))

    if root is None:
        pass
    elif not c.check("JUnit root is <testsuites name=\"moe-conform\">",
                     root.tag == "testsuites" and root.get("name") == "moe-conform",
                     f"root is <{root.tag} name={root.get('name')!r}>"):
        pass
    else:
        suites = root.findall("testsuite")
        stray = [child.tag for child in root if child.tag != "testsuite"]
        c.check("JUnit root holds only <testsuite> elements", not stray, f"found {stray}")

        # Each suite's attributes agree with its own testcases.
        all_cases = []
        suite_problems = []
        for s in suites:
            name = s.get("name") or ""
            cases = s.findall("testcase")
            kinds = [testcase_kind(tc) for tc in cases]
            own = {"tests": len(cases), "failures": kinds.count("failure"), "errors": kinds.count("error"),
                   "skipped": kinds.count("skipped")}
            if attr_counts(s) != own:
                suite_problems.append(f"{name}: attributes {attr_counts(s)}, testcases give {own}")
            if not name.startswith(SUITE_PREFIX):
                suite_problems.append(f"suite name {name!r} does not start with {SUITE_PREFIX!r}")
            for tc in cases:
                if tc.get("classname") != name:
                    suite_problems.append(f"{name}: testcase {tc.get('name')!r} has classname {tc.get('classname')!r}")
                all_cases.append((name[len(SUITE_PREFIX):], tc))
        c.check("JUnit suite counts agree with their testcases", not suite_problems, "; ".join(suite_problems[:5]))

        root_sum = {k: 0 for k in ("tests", "failures", "errors", "skipped")}
        for s in suites:
            for k, v in attr_counts(s).items():
                root_sum[k] += v if isinstance(v, int) else 0
        c.check("JUnit root counts are the sums of the suite counts", attr_counts(root) == root_sum,
                f"root {attr_counts(root)}, suites sum to {root_sum}")

        if results is not None:
            # Totals against the JSON summary.
            summary = report["summary"]
            gated = report.get("fail_on_mistrusted", False)
            mistrusted = summary["mistrusted"]
            want_total = {
                "tests": summary["total"],
                "failures": summary["failed"] + summary["xpass"] + (mistrusted if gated else 0),
                "errors": summary["errors"],
                "skipped": summary["skipped"] + summary["xfail"] + (0 if gated else mistrusted),
            }
            c.check("JUnit root counts agree with the JSON summary", attr_counts(root) == want_total,
                    f"JUnit {attr_counts(root)}, JSON summary gives {want_total}")

            # Per backend against the JSON results.
            by_backend = {}
            first_seen = []
            for r in results:
                if r["backend"] not in by_backend:
                    first_seen.append(r["backend"])
                by_backend.setdefault(r["backend"], []).append(r["status"])
            problems = []
            suite_names = [(s.get("name") or "")[len(SUITE_PREFIX):] for s in suites]
            for s, backend in zip(suites, suite_names):
                want = junit_counts(by_backend.get(backend, []), gated)
                if attr_counts(s) != want:
                    problems.append(f"{s.get('name')}: JUnit {attr_counts(s)}, JSON results give {want}")
            for backend in by_backend:
                if backend not in suite_names:
                    problems.append(f"backend {backend!r} has JSON results but no JUnit suite")
            c.check("JUnit suite counts agree with the JSON results per backend", not problems,
                    "; ".join(problems[:5]))

            # Suite order: RunInfo backends, then others in first-seen order; one suite each.
            expected_order = []
            for b in list(report["backends"]) + first_seen:
                if b not in expected_order:
                    expected_order.append(b)
            c.check("JUnit suites are one per backend in the documented order", suite_names == expected_order,
                    f"JUnit {suite_names}, expected {expected_order}")

            # Every testcase is exactly one JSON result, and every result one testcase.
            unmatched = list(range(len(results)))
            problems = []
            for backend, tc in all_cases:
                name = tc.get("name")
                status = testcase_status(tc)
                kind = testcase_kind(tc)
                match = None
                for i in unmatched:
                    r = results[i]
                    if r["backend"] == backend and r["case"] == name and r["file"] == (tc.get("file") or ""):
                        match = i
                        break
                if match is None:
                    problems.append(f"testcase {backend}/{name} has no JSON result")
                    continue
                unmatched.remove(match)
                r = results[match]
                if status != r["status"]:
                    problems.append(f"testcase {backend}/{name}: status property {status!r}, JSON {r['status']!r}")
                if kind != junit_kind(r["status"], gated):
                    problems.append(f"testcase {backend}/{name}: child <{kind}> for JSON status {r['status']}")
                if kind == "skipped":
                    msg = tc.find("skipped").get("message") or ""
                    if not msg.startswith(r["status"]):
                        problems.append(f"testcase {backend}/{name}: skipped message {msg!r} does not name "
                                        f"{r['status']}")
                if (kind == "failure" and r["status"] == "MISTRUSTED"
                        and FAIL_ON_MISTRUSTED not in (tc.find(kind).get("message") or "")):
                    problems.append(f"testcase {backend}/{name}: MISTRUSTED <failure> message does not name "
                                    f"{FAIL_ON_MISTRUSTED}")
                if kind in ("failure", "error") and r["repro"] and r["repro"] not in (tc.find(kind).text or ""):
                    problems.append(f"testcase {backend}/{name}: <{kind}> text lacks the repro line")
            for i in unmatched:
                problems.append(f"JSON result {results[i]['backend']}/{results[i]['case']} has no JUnit testcase")
            c.check(f"each of {len(all_cases)} JUnit testcases matches one of {len(results)} JSON results",
                    not problems, "; ".join(problems[:5]) + (f"; ... {len(problems) - 5} more"
                                                              if len(problems) > 5 else ""))
            if args.expect_total is not None:
                c.check(f"JUnit report has {args.expect_total} testcases", len(all_cases) == args.expect_total,
                        f"it has {len(all_cases)}")
        elif report is not None:
            c.check("JUnit report agrees with the JSON report", False, "the JSON report is not schema-valid")

    print(f"{c.passed} passed, {c.failed} failed")
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
