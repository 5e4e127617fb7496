"""moe-conform list --json, read without our code: it validates against spec/list.schema.json
(jsonschema) and says what the text list says: the same backends in the same order with the same
availability and declared precisions, a loaded plugin as family "plugin", the same devices and
mutants; and a --json onto the plugin it loads is refused (exit 2) with the plugin unchanged.

Usage: check_list_json.py MOE_CONFORM PLUGIN OUT_DIR
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import jsonschema

SCHEMA = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "spec",
                                     "list.schema.json")))


def main():
    conform, plugin, out_dir = sys.argv[1:4]
    os.makedirs(out_dir, exist_ok=True)
    json_file = os.path.join(out_dir, "list.json")
    if os.path.exists(json_file):
        os.remove(json_file)
    done = subprocess.run([conform, "list", "--backend-lib", plugin, "--json", json_file], capture_output=True,
                          text=True)
    if done.returncode != 0:
        sys.exit(f"moe-conform list exited {done.returncode}: {done.stderr}")
    listed = json.load(open(json_file))
    jsonschema.validate(listed, SCHEMA)

    # The text's backend lines: "  NAME  available|unavailable  DESCRIPTION", then "declares ...".
    text = done.stdout.splitlines()
    lines = [l for l in text[1:text.index(next(l for l in text if l.startswith("OpenCL devices")))]]
    heads = [re.match(r"  (\S+)\s+(available|unavailable)\s", l) for l in lines]
    shown = [(m.group(1), m.group(2) == "available") for m in heads if m]
    got = [(b["name"], b["available"]) for b in listed["backends"]]
    if got != shown:
        sys.exit(f"JSON backends {got}, text {shown}")
    declares = [l.split("):", 1)[1].split(";")[0].strip() for l in lines if "declares (" in l]
    for b, d in zip(listed["backends"], declares):
        want = ", ".join(f"{t} " + "/".join([p["compute"], p["storage"]] + ([p["dequantisation"]]
                                                                           if "dequantisation" in p else []))
                         for t, p in ((t, b["declares"][t]) for t in ("f64", "f32", "f16", "bf16")))
        if want != d:
            sys.exit(f"{b['name']}: JSON declares {want!r}, text {d!r}")
        if b["available"] != (b["reason"] == ""):
            sys.exit(f"{b['name']}: available {b['available']} with reason {b['reason']!r}")
    families = {b["name"]: b["family"] for b in listed["backends"]}
    if families.get("loop_f32") != "loop" or families.get("reference_dense") != "reference":
        sys.exit(f"families {families}")
    plugins = [b for b in listed["backends"] if b["family"] == "plugin"]
    if len(plugins) != 1 or plugins[0] is not listed["backends"][-1]:
        sys.exit(f"expected one plugin, listed last: {plugins}")
    mutant_lines = text[text.index("Selftest mutants (moe-conform selftest):") + 1:]
    if [l.split()[0] for l in mutant_lines] != [m["name"] for m in listed["mutants"]]:
        sys.exit("the JSON's mutants are not the text's")
    if len(listed["opencl_devices"]) != sum(1 for l in text if re.match(r"  \d+:\d+ ", l)):
        sys.exit(f"devices {listed['opencl_devices']}")

    # --json onto the plugin (a copy: a broken check would write over it): refused before it is written.
    copy = os.path.join(out_dir, "plugin_copy.so")
    shutil.copyfile(plugin, copy)
    plugin = copy
    before = hashlib.sha256(open(plugin, "rb").read()).hexdigest()
    done = subprocess.run([conform, "list", "--backend-lib", plugin, "--json", plugin], capture_output=True, text=True)
    if done.returncode != 2 or "which this run reads" not in done.stderr:
        sys.exit(f"--json onto the plugin: exit {done.returncode}, {done.stderr!r}")
    if hashlib.sha256(open(plugin, "rb").read()).hexdigest() != before:
        sys.exit("--json onto the plugin changed the plugin")
    print(f"{len(got)} backends, {len(listed['mutants'])} mutants, {len(listed['opencl_devices'])} device(s): "
          "the JSON agrees with the text and the schema")


if __name__ == "__main__":
    main()
