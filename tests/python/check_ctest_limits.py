#!/usr/bin/env python3
"""A test registered by moe_conform_add_suite(... CASE_TIMEOUT c TIMEOUT t) as CTest has it: its
command passes --case-timeout c and its TIMEOUT property is t (ctest --show-only=json-v1)."""
import json
import subprocess
import sys


def main():
    ctest, build, name, case_timeout, timeout = sys.argv[1:6]
    listing = subprocess.run([ctest, "--show-only=json-v1", "-R", f"^{name}$"], cwd=build, check=True,
                             capture_output=True, text=True).stdout
    tests = json.loads(listing)["tests"]
    if len(tests) != 1:
        sys.exit(f"expected one test named {name}, ctest lists {len(tests)}")
    command = tests[0]["command"]
    properties = {p["name"]: p["value"] for p in tests[0].get("properties", [])}
    at = command.index("--case-timeout") if "--case-timeout" in command else -1
    if at < 0 or command[at + 1] != case_timeout:
        sys.exit(f"{name}: no --case-timeout {case_timeout} in {command}")
    if float(properties.get("TIMEOUT", -1)) != float(timeout):
        sys.exit(f"{name}: TIMEOUT is {properties.get('TIMEOUT')}, expected {timeout}")
    if properties.get("SKIP_RETURN_CODE") != 77:
        sys.exit(f"{name}: SKIP_RETURN_CODE is {properties.get('SKIP_RETURN_CODE')}, expected 77")
    print(f"{name}: --case-timeout {case_timeout}, TIMEOUT {timeout}, SKIP_RETURN_CODE 77")


if __name__ == "__main__":
    main()
