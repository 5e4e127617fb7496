#!/usr/bin/env python3
"""import moe_conform from the build tree, as a user would: a case's inputs and attributes match
what h5py reads from the file; check() gives the numbers `moe-conform check` gives for the same
output, whatever the array's byte order and strides; a stage the expert type does not have is
refused by name; an exception, a wrong return value or sys.exit in the function under test is that
case's ERROR and the run goes on, but KeyboardInterrupt stops the run as it stops Python; a filter
that matches nothing is exit 2 with the reason; a golden file the CLI refuses (stored output not
the inputs', MANIFEST.sha256 differing) is refused; repro lines rerun what was judged.

usage: check_python_package.py MOE_CONFORM SUITE WORK_DIR   (PYTHONPATH: build/python)
"""
import collections.abc
import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

import moe_conform
from check_dequantized_experts import check_dequantized_experts


def golden_stages(case):
    with h5py.File(case.file, "r") as f:
        return {name: f["stages/" + name][...] for name in f["stages"]}


def check_layouts(case, expect):
    """The values count, not their layout: big-endian, Fortran order, steps, negative strides."""
    ref = case.reference
    layouts = {
        "big-endian f64": ref.astype(">f8"),
        "big-endian f32": ref.astype(">f4"),
        "big-endian, Fortran order": np.asfortranarray(ref.astype(">f8")),
        "transposed view": ref.T.copy().T,
        "slice with a step": np.repeat(ref, 2, axis=1)[:, ::2],
        "negative strides": ref[::-1].copy()[::-1],
    }
    for what, output in layouts.items():
        r = moe_conform.check(case, output, compute="f32")
        expect(r.status == "PASS" and np.isfinite(r.worst_ratio), f"{what}: {r.status}, ratio {r.worst_ratio}")
    # A stage array is read the same way: the divergent element reports the value it holds.
    act = golden_stages(case)["act"].copy()
    act[1, 2, 3] += 1.0
    r = moe_conform.check(case, ref * 1.1, stages={"act": act.astype(">f8")})
    s = r.first_divergent_stage
    expect(s is not None and (s["stage"], s["token"], s["slot"], s["feature"]) == ("act", 1, 2, 3)
           and s["got"] == act[1, 2, 3], f"big-endian stage: {s}")


def check_stage_names(suite, expect):
    """A stage the case's expert type does not have is refused, naming it and the ones it has."""
    gemm3 = moe_conform.load_case(os.path.join(suite, "gemm3_qwen_openvino_f32.h5"))
    gemm2 = moe_conform.load_case(os.path.join(suite, "gemm2_gptoss_spec_f32.h5"))
    act = golden_stages(gemm3)["act"]
    for case, stage, allowed in [(gemm3, "foo", "gate, up, act, down"), (gemm3, "gate_up", "gate, up, act, down"),
                                 (gemm2, "gate", "gate_up, act, down")]:
        try:
            moe_conform.check(case, case.reference, stages={stage: act})
            expect(False, f"stage '{stage}' accepted on {case.expert_type}")
        except ValueError as e:
            expect(f"'{stage}'" in str(e) and case.expert_type in str(e) and allowed in str(e),
                   f"unknown stage named with the allowed ones: {e}")

    # From the function under test: that case's ERROR, naming the stage.
    def fn(c):
        return np.zeros(c.inputs["hidden_states"].shape, np.float32), {"gate_up": act}

    summary = moe_conform.run_suite(fn, suite, filter="gemm3_qwen_openvino_f32", quiet=True)
    r = summary.results[0]
    expect(r.status == "ERROR" and "'gate_up'" in r.reason, f"unknown stage from fn: {r.status} {r.reason}")


def check_interrupt(suite, expect):
    """Ctrl-C in the function under test (KeyboardInterrupt) stops the run; sys.exit is that case's
    ERROR (sys.exit(0) would otherwise end a CI job with status 0 after failures)."""
    calls = []

    def interrupted(c):
        calls.append(c.name)
        raise KeyboardInterrupt()

    try:
        moe_conform.run_suite(interrupted, suite, filter="gemm3_qwen_*", quiet=True)
        expect(False, "KeyboardInterrupt in fn did not stop run_suite")
    except KeyboardInterrupt:
        pass
    expect(len(calls) == 1, f"KeyboardInterrupt: fn called {len(calls)} times")

    calls = []

    def exits(c):
        calls.append(c.name)
        sys.exit(0)

    summary = moe_conform.run_suite(exits, suite, filter="gemm3_qwen_*", quiet=True)
    expect(len(calls) == len(summary.results) > 1, f"sys.exit(0): fn called {len(calls)} times")
    expect(all(r.status == "ERROR" and "sys.exit(0)" in r.reason for r in summary.results),
           f"sys.exit(0) in fn: {[(r.status, r.reason) for r in summary.results]}")
    expect(summary.exit_code == 1, f"sys.exit(0) in fn: exit_code {summary.exit_code}")

    # expect= and shard= as moe-conform run's --expect and --shard: shards split the cases
    # without overlap, an expected failure is XFAIL.
    seen = []
    for i in (1, 2, 3):
        part = moe_conform.run_suite(lambda c: np.zeros(c.inputs["hidden_states"].shape, np.float32), suite, filter="gemm3_qwen_*",
                                     shard=f"{i}/3", quiet=True)
        seen += [r.case for r in part.results]
    every = [r.case for r in moe_conform.run_suite(lambda c: np.zeros(c.inputs["hidden_states"].shape, np.float32), suite,
                                                    filter="gemm3_qwen_*", quiet=True).results]
    expect(sorted(seen) == sorted(every) and len(every) > 1, f"shards {seen} against {every}")
    # A shard with none of the selected cases: exit_code 77 (nothing compared), as moe-conform's,
    # with its report file written, holding no result.
    empty_report = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"moe_empty_shard_{os.getpid()}.json")
    empty = moe_conform.run_suite(exits, suite, filter="gemm3_qwen_*", shard="999/999", json=empty_report, quiet=True)
    written = json.load(open(empty_report))
    os.remove(empty_report)
    expect(empty.exit_code == 77 and not empty.results and not empty.input_errors and written["results"] == [],
           f"an empty shard: exit_code {empty.exit_code}, input_errors {empty.input_errors}")
    known = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"moe_expect_{os.getpid()}.json")
    with open(known, "w") as f:
        json.dump({"format": "moe-expectations", "format_version": 1, "expectations": [
            {"backend": "*", "case": "gemm3_qwen_*", "status": "FAIL", "reason": "zeros"}]}, f)
    xfail = moe_conform.run_suite(lambda c: np.zeros(c.inputs["hidden_states"].shape, np.float32), suite, filter="gemm3_qwen_*",
                                  expect=known, quiet=True)
    os.remove(known)
    expect(xfail.exit_code == 0 and all(r.status == "XFAIL" for r in xfail.results),
           f"expect=: {xfail.exit_code} {[r.status for r in xfail.results]}")

    none = moe_conform.run_suite(exits, suite, filter="no_such_case*", quiet=True)
    expect(none.exit_code == 2 and any("matched" in e for e in none.input_errors),
           f"a filter matching nothing: exit_code {none.exit_code}, input_errors {none.input_errors}")


def check_declarations(moe, suite, work, expect):
    """dequant= reaches the bound (a kernel forming W_f in bf16 declares it, in each door alike);
    a misshapen stage fails even when the output passes; a report path that cannot be written is
    refused before the function under test runs."""
    golden = os.path.join(suite, "compressed_u4_gemm3_group4_zp.h5")
    case = moe_conform.load_case(golden)
    output = case.reference * (1 + 2.0 ** -20)
    plain = moe_conform.check(case, output, compute="f32")
    wide = moe_conform.check(case, output, compute="f32", dequant="bf16")
    data = moe_conform.check(case, output, compute="f32", dequant="data")
    expect(wide.worst_ratio < plain.worst_ratio, f"dequant bf16 widens the bound: {wide.worst_ratio} vs {plain.worst_ratio}")
    expect(data.worst_ratio == moe_conform.check(case, output, compute="f32", dequant=case.input_types["hidden_states"]).worst_ratio,
           "dequant='data' is the data type")
    npy = os.path.join(work, "deq.npy")
    np.save(npy, output.astype(np.float64))
    report = os.path.join(work, "deq.json")
    subprocess.run([moe, "check", "--quiet", "--case", golden, "--results", npy, "--precision", "f32/f32/bf16",
                    "--json", report], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with open(report) as f:
        cli = json.load(f)["results"][0]
    expect(cli["metrics"]["worst_ratio"] == wide.worst_ratio, f"--precision f32/f32/bf16: {cli['metrics']['worst_ratio']}")
    result = os.path.join(work, "deq.h5")
    with h5py.File(result, "w") as f:
        f.attrs.update(format="moe-result", format_version=1, case=case.name, compute_type="f32", dequant_type="bf16",
                       golden_sha256=hashlib.sha256(open(golden, "rb").read()).hexdigest())
        f["outputs/output"] = output
    subprocess.run([moe, "check", "--quiet", "--case", golden, "--results", result, "--json", report],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with open(report) as f:
        cli = json.load(f)["results"][0]
    expect(cli["metrics"]["worst_ratio"] == wide.worst_ratio, f"dequant_type bf16: {cli['metrics']['worst_ratio']}")

    # A stage in another layout than [T, K, features]: the output passes, the case does not.
    qwen = moe_conform.load_case(os.path.join(suite, "gemm3_qwen_openvino_f32.h5"))
    act = golden_stages(qwen)["act"]
    r = moe_conform.check(qwen, qwen.reference, stages={"act": act.reshape(act.shape[0] * act.shape[1], -1)})
    expect(r.status == "FAIL" and "act (shape" in r.reason, f"misshapen stage: {r.status} {r.reason}")
    r = moe_conform.check(qwen, qwen.reference, stages={"act": act})
    expect(r.status == "PASS", f"stage in the golden layout: {r.status} {r.reason}")

    calls = []
    for flag in ("json", "junit"):
        try:
            moe_conform.run_suite(lambda c: calls.append(c), suite, quiet=True, **{flag: os.path.join(work, "no", "r")})
            expect(False, f"{flag} into a missing folder accepted")
        except ValueError as e:
            expect("does not exist" in str(e), f"{flag}: {e}")
    expect(not calls, f"the function ran {len(calls)} times before the report path was refused")


def check_golden_trust(moe, suite, work, expect):
    """A golden file is refused as `moe-conform run` refuses it: a stored output that the reference
    recomputed from the inputs contradicts (load_case: GoldenFileError with the CLI's message), a
    suite whose MANIFEST.sha256 differs (run_suite: exit_code 2, fn never called)."""
    name = "gemm3_qwen_openvino_f32"
    doubled = os.path.join(work, "doubled.h5")
    shutil.copy(os.path.join(suite, name + ".h5"), doubled)
    with h5py.File(doubled, "r+") as f:
        f["outputs/output"][...] *= 2
    cli = subprocess.run([moe, "run", "--quiet", "--backend", "loop_f32", "--case", doubled],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        moe_conform.load_case(doubled)
        expect(False, "load_case accepted a doubled stored output")
    except moe_conform.GoldenFileError as e:
        expect(cli.returncode == 2 and str(e) in cli.stderr and "recomputed" in str(e),
               f"doubled output: load_case says {e!r}, the CLI (exit {cli.returncode}) {cli.stderr!r}")

    folder = os.path.join(work, "manifest")
    os.makedirs(folder)
    for n in (name, "gemm3_qwen_spec_f32"):
        shutil.copy(os.path.join(suite, n + ".h5"), folder)
    sums = {n: hashlib.sha256(open(os.path.join(folder, n), "rb").read()).hexdigest() for n in sorted(os.listdir(folder))}

    def write_manifest(wrong):
        with open(os.path.join(folder, "MANIFEST.sha256"), "w") as f:
            for n, h in sums.items():
                f.write(f"{'0' * 64 if n == wrong else h}  {n}\n")

    calls = []

    def zeros(c):
        calls.append(c.name)
        return np.zeros(c.inputs["hidden_states"].shape, np.float32)

    write_manifest(None)
    ok = moe_conform.run_suite(zeros, folder, quiet=True)
    expect(ok.exit_code == 1 and len(calls) == 2 and not ok.input_errors, f"matching manifest: {ok.exit_code} {ok.input_errors}")
    write_manifest(name + ".h5")
    calls.clear()
    cli = subprocess.run([moe, "run", "--quiet", "--backend", "loop_f32", "--suite", folder],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    bad = moe_conform.run_suite(zeros, folder, quiet=True)
    expect(cli.returncode == 2 and "SHA-256 differs" in cli.stderr, f"CLI on a wrong manifest: {cli.returncode} {cli.stderr!r}")
    expect(bad.exit_code == 2 and not calls and not bad.results
           and any(e == name + ".h5: SHA-256 differs from MANIFEST.sha256" for e in bad.input_errors),
           f"wrong manifest: exit_code {bad.exit_code}, {len(calls)} calls, {bad.input_errors}")
    skipped = moe_conform.run_suite(zeros, folder, quiet=True, manifest=False)
    expect(skipped.exit_code == 1 and len(calls) == 2, f"manifest=False: {skipped.exit_code}, {len(calls)} calls")
    expect(all("manifest=False" in r.repro for r in skipped.results), f"manifest=False repro: {skipped.results[0].repro}")


def check_undecodable_names(suite, work, expect):
    """A case name that is not UTF-8 (golden files are anyone's bytes) is one case's business: the
    suite's other verdicts and reports still come back, Case.name keeps the bytes
    (surrogateescape) and Result.case shows them escaped, as the command line does."""
    folder = os.path.join(work, "undecodable")
    os.makedirs(folder)
    shutil.copy(os.path.join(suite, "topk_one.h5"), os.path.join(folder, "a.h5"))
    shutil.copy(os.path.join(suite, "gemm3_qwen_openvino_f32.h5"), os.path.join(folder, "b.h5"))
    raw = b"bad\xff\xfe name"
    with h5py.File(os.path.join(folder, "b.h5"), "r+") as f:
        f.attrs["case"] = np.bytes_(raw)
    case = moe_conform.load_case(os.path.join(folder, "b.h5"))
    expect(case.name.encode("utf-8", "surrogateescape") == raw, f"Case.name {case.name!r}")
    report = os.path.join(work, "undecodable.json")
    s = moe_conform.run_suite(lambda c: c.inputs["hidden_states"] * 0, folder, quiet=True, manifest=False, json=report)
    names = sorted(r.case for r in s.results)
    expect(names == ["bad\\xff\\xfe name", "topk_one"], f"Result.case names {names}")
    expect(s.exit_code == 1 and len(json.load(open(report))["results"]) == 2, f"exit {s.exit_code}, report written")
    # Its repro line selects it again: filters match the name as printed too.
    bad = next(r for r in s.results if r.case != "topk_one")
    fn = lambda c: c.inputs["hidden_states"] * 0
    with contextlib.redirect_stdout(io.StringIO()):
        again = eval(bad.repro, {"moe_conform": moe_conform, "fn": fn})
    expect([r.case for r in again.results] == [bad.case], f"repro {bad.repro!r}: {[r.case for r in again.results]}")


def check_repro_lines(suite, expect):
    """A printed repro line, run as printed, gives the verdict it reproduces: the declared
    precision travels with it (a bf16 kernel rerun under the f32 bound would FAIL)."""
    name = "gemm3_qwen_openvino_f32"
    case = moe_conform.load_case(os.path.join(suite, name + ".h5"))
    output = case.reference * (1 + 2.0 ** -12)  # within a bf16-storage bound, far outside an f32 one
    expect(moe_conform.check(case, output).status == "FAIL", "a 2^-12 relative error fails in f32")

    def fn(c):
        return output

    # bf16 intermediates on f32 accumulation: a bf16 accumulation's bounds hold |ref| on this
    # case, which makes any pass MISTRUSTED (spec/tolerance.md, "Vacuous comparisons").
    declared = dict(compute="f32", storage="bf16", dequant="bf16")
    first = moe_conform.run_suite(fn, suite, filter=name, quiet=True, **declared).results[0]
    checked = moe_conform.check(case, output, **declared)
    expect(first.status == checked.status == "PASS", f"bf16-storage kernel: {first.status} {checked.status}")
    with contextlib.redirect_stdout(io.StringIO()):
        again = eval(first.repro, {"moe_conform": moe_conform, "fn": fn})
        checked_again = eval(checked.repro, {"moe_conform": moe_conform, "output": output})
    expect(again.results[0].status == "PASS", f"run_suite repro {first.repro!r}: {again.results[0].status}")
    expect(checked_again.status == "PASS", f"check repro {checked.repro!r}: {checked_again.status}")


def check_shrink(moe, suite, work, expect):
    """moe_conform.shrink, as moe-conform shrink: a function that fails a case gets a small case
    that it fails the same way, written as a golden file that moe-conform reads, with a repro line
    that reruns it; a case the function passes, or out= onto the case itself, is an InputError."""
    def zeros(c):
        return np.zeros(c.inputs["hidden_states"].shape, np.float32)

    original = os.path.join(suite, "gemm2_medium.h5")
    out = os.path.join(work, "shrunk.h5")
    r = moe_conform.shrink(zeros, original, out=out, quiet=True)
    expect(r.status == "FAIL" and r.file == out and r.stable and not r.stopped_early,
           f"shrink: {r.status} {r.file} stable {r.stable} stopped_early {r.stopped_early!r}")
    expect(r.before.startswith("T 67, K 4, E 16, H 96, I 48") and r.after.startswith("T 1, K 1, E 1,"),
           f"shrink sizes: {r.before} -> {r.after}")
    with contextlib.redirect_stdout(io.StringIO()):
        again = eval(r.repro, {"moe_conform": moe_conform, "fn": zeros})
    expect(again.exit_code == 1 and [x.status for x in again.results] == ["FAIL"],
           f"shrink repro {r.repro!r}: exit_code {again.exit_code}")
    inspected = subprocess.run([moe, "run", "--backend", "reference", "--case", out, "--quiet"], capture_output=True,
                               text=True)
    expect(inspected.returncode == 0, f"moe-conform run --case on the shrunk file: {inspected.returncode}")
    expect(r.exit_code == 0, f"shrink exit_code {r.exit_code} on a deterministic fn")
    # A fn that fails a case on its first run and raises on a rerun of the same inputs (a race
    # that shows once): the shrink is written, and the result says it is not deterministic,
    # with moe-conform shrink's exit code for it.
    seen = set()

    def flaky(c):
        key = b"".join(np.ascontiguousarray(c.inputs[k]).tobytes() + str(c.inputs[k].shape).encode()
                       for k in sorted(c.inputs))
        if key in seen:
            raise RuntimeError("the race went the other way")
        seen.add(key)
        return zeros(c)

    flaky_out = os.path.join(work, "flaky_shrunk.h5")
    f = moe_conform.shrink(flaky, original, out=flaky_out, quiet=True)
    expect(f.status == "FAIL" and not f.stable and f.exit_code == 4 and os.path.exists(flaky_out)
           and "not deterministic" in f.summary and "not deterministic" in repr(f),
           f"shrink of a flaky fn: {f.status} stable {f.stable} exit_code {f.exit_code} {f!r}")
    for what, call in (("a passing case", lambda: moe_conform.shrink(lambda c: moe_conform.load_case(original).reference,
                                                                       original, out=out, quiet=True)),
                       ("out= the case itself", lambda: moe_conform.shrink(zeros, original, out=original, quiet=True))):
        try:
            call()
            expect(False, f"shrink on {what}: no InputError")
        except moe_conform.InputError:
            pass


def check_model_scale_door(suite, work, expect):
    """What a model-sized case needs of the door (tracemalloc counts numpy's arrays): case.inputs
    converts an input when it is read, not every weight at the first access (Qwen3-30B-A3B's bf16
    weights are 2.5 GB as float32); case.dequantized() writes its float64 array once, without a
    second copy; a case fn keeps (or its inputs, or one held by a raised exception's traceback)
    stays readable after the run, though fn was handed the runner's own problem; and run_suite
    prints moe-conform run's progress line per case on stderr (its "still running" notices every
    30 s come with it), none when quiet."""
    import tracemalloc
    name = "gemm2_gptoss_spec_bf16"
    path = os.path.join(suite, name + ".h5")
    loaded = moe_conform.load_case(path)
    seen = {}

    def reads_hidden_states(c):
        tracemalloc.start()
        try:
            x = c.inputs["hidden_states"]
            seen["traced"] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        seen["weights"] = sum(c.inputs[n].nbytes for n in c.inputs if n.startswith("weight_"))
        return np.zeros(x.shape, np.float32)

    moe_conform.run_suite(reads_hidden_states, path, quiet=True)
    expect(seen.get("weights", 0) > 0 and seen["traced"] < seen["weights"] / 2,
           f"reading hidden_states converted {seen.get('traced')} bytes (the weights are {seen.get('weights')})")
    expect(isinstance(loaded.inputs, collections.abc.Mapping) and "weight_0" in loaded.inputs
           and "nothing" not in loaded.inputs and len(loaded.inputs) == len(loaded.input_types)
           and sorted(dict(loaded.inputs)) == sorted(loaded.input_types), "case.inputs is a mapping of every input")

    compressed = moe_conform.load_case(os.path.join(suite, "compressed_mxfp4_gemm2_f32.h5"))
    tracemalloc.start()
    try:
        w = compressed.dequantized("weight_0")
        traced = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    expect(w.dtype == np.float64 and traced < w.nbytes * 1.5, f"dequantized: {traced} bytes traced for {w.nbytes}")

    kept, kept_inputs = [], []

    def keeps(c):
        kept.append(c)
        kept_inputs.append(c.inputs)
        if len(kept) == 2:
            raise RuntimeError("kernel failed")  # the traceback holds the case too
        return np.zeros(c.inputs["hidden_states"].shape, np.float32)

    moe_conform.run_suite(keeps, suite, filter=[name, "gemm3_qwen_spec_bf16"], quiet=True)
    for c, inputs in zip(kept, kept_inputs):
        want = moe_conform.load_case(os.path.join(suite, c.name + ".h5"))
        same = all(np.array_equal(inputs[n], want.inputs[n]) and np.array_equal(c.inputs[n], want.inputs[n])
                   for n in want.input_types)
        expect(len(kept) == 2 and same and c.attrs["T"] == want.attrs["T"] and c.name == want.name,
               f"case {c.name} kept by fn is readable after the run")

    script = ("import sys, numpy as np, moe_conform\n"
              "zeros = lambda c: np.zeros(c.inputs['hidden_states'].shape, np.float32)\n"
              "moe_conform.run_suite(zeros, sys.argv[1], quiet=sys.argv[2] == 'quiet', name='zeros')\n")
    for mode in ("loud", "quiet"):
        r = subprocess.run([sys.executable, "-c", script, path, mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        line = f"[1/1] FAIL       zeros            {name}"
        expect((line in r.stderr) == (mode == "loud"), f"run_suite ({mode}) progress on stderr: {r.stderr!r}")


def main():
    moe, suite, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    # Inputs exactly as stored: bf16 bit patterns widened to float32, f16 as float16.
    path = os.path.join(suite, "gemm2_gptoss_spec_bf16.h5")
    case = moe_conform.load_case(path)
    with h5py.File(path, "r") as f:
        bits = f["inputs/weight_0"][...].astype(np.uint32) << 16
    expect(case.input_types["weight_0"] == "bf16", "bf16 input type")
    expect(np.array_equal(case.inputs["weight_0"], bits.view(np.float32)), "bf16 values widened exactly")
    expect(case.attrs["expert_type"] == "GEMM2_BIAS_SWIGLU_CLAMP" and case.convention == "spec", "attributes")
    expect(case.reference.dtype == np.float64, "reference is f64")
    f16 = moe_conform.load_case(os.path.join(suite, "gemm3_qwen_spec_f16.h5"))
    expect(f16.inputs["hidden_states"].dtype == np.float16, "f16 input as float16")

    # check() and `moe-conform check` on the same output give the same verdict and numbers.
    name = "gemm3_qwen_openvino_f32"
    golden = os.path.join(suite, name + ".h5")
    case = moe_conform.load_case(golden)
    output = case.reference.astype(np.float32) * np.float32(1.0001)
    result = moe_conform.check(case, output, compute="f32")
    npy = os.path.join(work, "out.npy")
    np.save(npy, output)
    report = os.path.join(work, "cli.json")
    r = subprocess.run([moe, "check", "--quiet", "--case", golden, "--results", npy, "--precision", "f32",
                        "--json", report], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(report) as f:
        cli = json.load(f)["results"][0]
    expect(result.status == cli["status"], f"status {result.status} vs CLI {cli['status']}")
    expect(result.worst_ratio == cli["metrics"]["worst_ratio"], "worst_ratio equals the CLI's")
    expect(result.max_abs == cli["metrics"]["max_abs_error"], "max_abs equals the CLI's")
    expect(result.over_bound == cli["metrics"]["over_bound"], "over_bound equals the CLI's")
    expect(r.returncode == (1 if result.status == "FAIL" else 0), "CLI exit code matches")
    expect(result.status == "FAIL" and result.worst_element is not None, "a 1e-4 relative error fails in f32")

    # The function under test: an exception, a wrong type, a wrong shape; the run goes on.
    def fn(c):
        if c.name.startswith("gemm3_qwen_spec"):
            raise RuntimeError("kernel launch failed")
        if c.name.startswith("gemm2_gptoss_spec"):
            return [1, 2, 3]
        return np.zeros((1, 1), np.float32)

    summary = moe_conform.run_suite(fn, suite, filter=["gemm3_qwen_spec_*", "gemm2_gptoss_spec_*", "topk_one"],
                                    quiet=True)
    by = {x.case: x for x in summary.results}
    expect(summary.exit_code == 1, f"exit code {summary.exit_code}")
    expect(by["gemm3_qwen_spec_f32"].status == "ERROR" and "kernel launch failed" in by["gemm3_qwen_spec_f32"].reason,
           "exception -> ERROR with its message")
    expect(by["gemm2_gptoss_spec_f32"].status == "ERROR" and "numpy array" in by["gemm2_gptoss_spec_f32"].reason,
           "wrong type -> ERROR naming it")
    expect(by["topk_one"].status == "FAIL" and "shape" in by["topk_one"].reason, "wrong shape -> FAIL")
    expect(len(summary.results) == 9, f"{len(summary.results)} results for the filter")
    try:
        moe_conform.run_suite(fn, suite, compute="f33")
        expect(False, "unknown compute type accepted")
    except ValueError as e:
        expect("f33" in str(e), "unknown compute type named")

    check_layouts(case, expect)
    check_stage_names(suite, expect)
    check_interrupt(suite, expect)
    check_declarations(moe, suite, work, expect)
    check_golden_trust(moe, suite, work, expect)
    check_repro_lines(suite, expect)
    check_undecodable_names(suite, work, expect)
    check_shrink(moe, suite, work, expect)
    check_model_scale_door(suite, work, expect)
    check_dequantized_experts(moe, suite, work, expect)

    # case.inputs is built once per case (not copied again on each access).
    expect(case.inputs is case.inputs and case.inputs["weight_0"] is case.inputs["weight_0"], "case.inputs cached")

    for f in failures:
        print("FAIL", f)
    print(f"python package: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
