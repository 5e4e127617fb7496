"""examples/python/golden_h5py.py, the h5py-only reader and result writer of door 1.

    check_golden_h5py_example.py run MOE_CONFORM SUITE WORKDIR [--module PATH]
        runs the example as a user would (no moe_conform on the path, so an import of it fails)
        over every case of SUITE into WORKDIR, then `moe-conform check --suite SUITE --results
        WORKDIR`: exit 0 and every case of the folder passed (the count is read from the folder).
    check_golden_h5py_example.py compare MOE_CONFORM SUITE WORKDIR [--module PATH]
        (needs PYTHONPATH=build/python) on every case of SUITE: read_case()'s inputs, types and
        attributes equal moe_conform's case.inputs, case.input_types and case.attrs, its sha256
        the file's, and dequantize() equals case.dequantized() bit for bit, whole and by experts;
        write_result() stores bf16 (torch, uint16) as bits with element_type, refuses a wrong
        shape, leaves no temporary file, and a torch bf16 output passes `moe-conform check`.

--module points at another copy of the example (a deliberately broken one, to see these fail).
"""
import ast
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MODULE = os.path.join(HERE, "..", "..", "examples", "python", "golden_h5py.py")
failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)
        if len(failures) <= 20:
            print("FAIL:", what)


def load_module(path):
    spec = importlib.util.spec_from_file_location("golden_h5py", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def suite_files(suite):
    files = sorted(os.path.join(suite, n) for n in os.listdir(suite) if n.endswith(".h5"))
    if not files:
        sys.exit(f"no *.h5 files in {suite}")
    return files


def same_bits(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def run(moe_conform_bin, suite, workdir, module):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the GPU box has no moe_conform
    example = subprocess.run([sys.executable, module, suite, workdir], env=env, capture_output=True, text=True)
    print(example.stdout[-400:], example.stderr[-2000:])
    expect(example.returncode == 0, f"the example exited {example.returncode}")
    n = len(suite_files(suite))
    written = [f for f in os.listdir(workdir) if f.endswith(".h5")]
    expect(len(written) == n and not [f for f in os.listdir(workdir) if ".tmp." in f],
           f"{len(written)} result files (and no temporary ones) for {n} cases")
    check = subprocess.run([moe_conform_bin, "check", "--suite", suite, "--results", workdir],
                           capture_output=True, text=True)
    counts = re.search(r"^(\d+) passed, (\d+) failed, (\d+) skipped", check.stdout, re.M)
    print(check.stdout[-3000:] if check.returncode else (counts.group(0) if counts else check.stdout[-3000:]),
          check.stderr[-2000:])
    expect(check.returncode == 0, f"moe-conform check exited {check.returncode}")
    expect(counts is not None and counts.groups() == (str(n), "0", "0"),
           f"count line {counts.group(0) if counts else None!r}, expected '{n} passed, 0 failed, 0 skipped'")


def compare(moe_conform_bin, suite, workdir, module):
    import moe_conform  # the test may; the example may not (and imports torch only for a torch output)
    tree = ast.parse(open(module).read())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    expect(imported <= {"hashlib", "os", "sys", "h5py", "numpy", "torch"}, f"the example imports {sorted(imported)}")
    g = load_module(module)
    cases = weights = 0
    kinds = set()
    for path in suite_files(suite):
        ours, theirs = g.read_case(path), moe_conform.load_case(path)
        name = os.path.basename(path)
        cases += 1
        expect(ours["name"] == theirs.name, f"{name}: name {ours['name']!r} != {theirs.name!r}")
        expect(ours["sha256"] == hashlib.sha256(open(path, "rb").read()).hexdigest(), f"{name}: sha256")
        expect(ours["attrs"] == theirs.attrs, f"{name}: attrs {ours['attrs']} != case.attrs {theirs.attrs}")
        expect(ours["data_type"] == theirs.data_type and ours["exact"] == theirs.exact, f"{name}: data_type, exact")
        expect(ours["input_types"] == dict(theirs.input_types), f"{name}: input_types {ours['input_types']}")
        expect(sorted(ours["inputs"]) == sorted(theirs.inputs), f"{name}: input names")
        for input_name in ours["inputs"]:
            expect(same_bits(ours["inputs"][input_name], theirs.inputs[input_name]),
                   f"{name}: inputs[{input_name}] {ours['inputs'][input_name].dtype} differs from case.inputs'")
        if ours["reference"] is not None:
            expect(same_bits(ours["reference"], theirs.reference), f"{name}: reference")
        for w in [n for n in ours["input_types"] if n + "_scale" in ours["input_types"]]:
            weights += 1
            t = ours["input_types"]
            kinds.add((t[w], t[w + "_scale"], t.get(w + "_zero_point"), ours["inputs"][w + "_scale"].ndim,
                       ours["inputs"][w + "_scale"].shape[1] == 1))
            full = theirs.dequantized(w)
            expect(same_bits(g.dequantize(ours, w), full), f"{name}: dequantize({w}) != case.dequantized bit for bit")
            E = full.shape[0]
            some = [E - 1, 0, E - 1]
            expect(same_bits(g.dequantize(ours, w, experts=some), theirs.dequantized(w, experts=some)),
                   f"{name}: dequantize({w}, experts={some})")
        try:
            g.dequantize(ours, "hidden_states")
            expect(False, f"{name}: dequantize(hidden_states) accepted")
        except ValueError:
            pass
    # What the suite must reach for "every compressed format" to mean something.
    weight_types = {k[0] for k in kinds}
    expect(weight_types >= {"u8", "i8", "u4", "i4", "f4e2m1", "f8e4m3", "f8e5m2"}, f"weight types {weight_types}")
    expect({k[1] for k in kinds} >= {"f32", "f16", "bf16", "f8e8m0"}, "scale types")
    expect({k[2] for k in kinds} >= {None, "u4", "u8", "i4", "i8", "f16"}, f"zero point types {[k[2] for k in kinds]}")
    expect({k[3] for k in kinds} >= {3, 4} and True in {k[4] for k in kinds},
           "scale layouts [E, N, G], [E, N, G, 1] and [E, 1, G]")
    print(f"{cases} cases: inputs, input_types, attrs equal to moe_conform's; "
          f"{weights} compressed weights ({len(kinds)} kinds) dequantised bit for bit")

    # The bundled files store every attribute; a user's own file may leave out the optional ones
    # (golden-format.md): the resolved five always, alpha, beta and gate_idx where they are the
    # convention's defaults. Copies without them must still resolve as moe_conform resolves them.
    defaults = {"spec": {"expert_alpha": 1.0, "expert_beta": 0.0},
                "openvino": {"expert_alpha": 0.0, "expert_beta": 1.0, "gate_idx": 0}}
    stripped = set()
    os.makedirs(os.path.join(workdir, "defaults"))
    for path in suite_files(suite):
        copy = os.path.join(workdir, "defaults", os.path.basename(path))
        shutil.copyfile(path, copy)
        with h5py.File(copy, "r+") as f:
            drop = ["swish_beta", "clamp_limit", "gate_lane", "weight_layout", "routing_layout"]
            drop += [k for k, v in defaults[f.attrs["convention"]].items() if k in f.attrs and f.attrs[k] == v]
            stripped.update((f.attrs["convention"], k) for k in drop[5:])
            for k in drop:
                if k in f.attrs:
                    del f.attrs[k]
        ours, theirs = g.read_case(copy)["attrs"], moe_conform.load_case(copy).attrs
        expect(ours == theirs, f"{os.path.basename(path)} without {drop}: attrs {ours} != case.attrs {theirs}")
        os.remove(copy)
    expect(stripped >= {("spec", "expert_alpha"), ("spec", "expert_beta"), ("openvino", "expert_alpha"),
                        ("openvino", "expert_beta"), ("openvino", "gate_idx")}, f"defaults exercised: {stripped}")

    # pack_4bit: element 2i in the low nibble (spec/compressed.md, section 4).
    expect(g.pack_4bit(np.array([1, 2, 15, 0], np.uint8)).tolist() == [0x21, 0x0F], "pack_4bit u4")
    expect(g.pack_4bit(np.array([-1, -8], np.int8)).tolist() == [0x8F], "pack_4bit i4")
    # float32_to_bf16 rounds to nearest even.
    x = np.array([1.0, 1 + 2.0**-8, 1 + 3 * 2.0**-8, -np.inf, np.nan], np.float32)
    expect(g.float32_to_bf16(x)[:4].tolist() == [0x3F80, 0x3F80, 0x3F82, 0xFF80], "float32_to_bf16 ties to even")

    # write_result: bf16 from torch and from bits, precision "data", a wrong shape, atomicity.
    import torch
    path = os.path.join(suite, "gemm3_qwen_openvino_bf16.h5")
    case = g.read_case(path)
    ref_bf16 = torch.from_numpy(case["reference"]).to(torch.bfloat16)
    os.makedirs(workdir, exist_ok=True)
    out = os.path.join(workdir, "torch_bf16.h5")
    with h5py.File(path, "r") as f:  # the golden file's own stages, [T, K, features]: they pass
        stages = {name: f["stages"][name][()] for name in f["stages"]}
    g.write_result(out, case, ref_bf16, compute_type="f32", storage_type="data", implementation="t", stages=stages)
    with h5py.File(out, "r") as f:
        ds = f["outputs/output"]
        expect(ds.dtype == np.uint16 and ds.attrs["element_type"] == "bf16", "torch bf16 stored as bf16 bits")
        expect(np.array_equal(ds[()], ref_bf16.view(torch.int16).numpy().view(np.uint16)), "torch bf16 bits kept")
        expect(sorted(f["stages"]) == sorted(stages) and f["stages/act"].attrs["element_type"] == "f64", "stages")
        expect(dict(f.attrs) == {"format": "moe-result", "format_version": 1, "case": case["name"],
                                 "golden_sha256": case["sha256"], "implementation": "t",
                                 "compute_type": "f32", "storage_type": "bf16"}, f"result attributes {dict(f.attrs)}")
    expect(not [n for n in os.listdir(workdir) if ".tmp." in n], "a temporary file left behind")
    check = subprocess.run([moe_conform_bin, "check", "--case", path, "--results", out], capture_output=True, text=True)
    expect(check.returncode == 0 and "1 passed, 0 failed" in check.stdout, f"check of the torch bf16 result: "
           f"{check.returncode} {check.stdout[-500:]} {check.stderr[-500:]}")
    bits = g.float32_to_bf16(case["reference"].astype(np.float32))
    g.write_result(out, case, bits, compute_type="f32", storage_type="f32", dequant_type="bf16")
    with h5py.File(out, "r") as f:
        expect(f["outputs/output"].attrs["element_type"] == "bf16" and f.attrs["dequant_type"] == "bf16", "uint16")
    for bad, bad_stages in ((case["reference"].reshape(-1), None), (case["reference"].astype(np.int32), None),
                            (case["reference"], {"gate_up": stages["act"]})):  # GEMM3 has no gate_up
        try:
            g.write_result(out, case, bad, compute_type="f32", storage_type="f32", stages=bad_stages)
            expect(False, f"write_result took an output of {bad.dtype} {bad.shape}, stages {bad_stages}")
        except (ValueError, TypeError):
            pass
    expect(not [n for n in os.listdir(workdir) if ".tmp." in n], "a temporary file left behind")


def main():
    args = sys.argv[1:]
    module = DEFAULT_MODULE
    if "--module" in args:
        i = args.index("--module")
        module = args[i + 1]
        del args[i:i + 2]
    mode, moe_conform_bin, suite, workdir = args
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    {"run": run, "compare": compare}[mode](moe_conform_bin, suite, workdir, os.path.abspath(module))
    print(f"{len(failures)} failures" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
