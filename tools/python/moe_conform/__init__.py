"""moe_conform: judge a Mixture-of-Experts implementation against the moe-conform golden suite.

    import moe_conform
    case = moe_conform.load_case("data/golden/gemm3_qwen_openvino_f32.h5")
    result = moe_conform.check(case, my_output)             # numpy array, hidden_states' shape
    print(result.status, result.worst_ratio)

    summary = moe_conform.run_suite(my_fn, "data/golden")   # my_fn(case) -> output | (output, stages)

Every verdict comes from the same comparison engine, tolerance model and reports as the
`moe-conform` command (spec/tolerance.md, spec/report-format.md).
"""
import collections.abc as _abc
import os as _os

from ._moe_conform import (Case, Result, Summary, ShrinkResult, InputError, GoldenFileError, Skip, load_case,
                           check)
from . import _moe_conform as _impl

__all__ = ["Case", "Result", "Summary", "ShrinkResult", "InputError", "GoldenFileError", "Skip", "load_case", "check",
           "run_suite", "shrink"]


def run_suite(fn, suite_dir, compute="f32", storage=None, filter=None, json=None, junit=None, name=None,
              quiet=False, dequant=None, expect=None, shard=None, manifest=True, expert_type=None,
              fail_on_mistrusted=False):
    """Calls fn(case) for every case of suite_dir (a folder of golden files, or one golden file)
    and judges what it returns.

    fn returns the output (a numpy array of hidden_states' shape, float64/32/16) or
    (output, {stage name: array}) to have the first diverging stage named on a failure (the
    stages of case.expert_type: gate_up, act, down for GEMM2_BIAS_SWIGLU_CLAMP; gate, up, act,
    down for GEMM3_SWIGLU; another name is that case's ERROR). An exception raised by fn is that
    case's ERROR; the run goes on, but for moe_conform.Skip("reason"): fn does not handle this case
    (another expert type, a shape it has no kernel for), which is SKIP with that reason, counted in
    skipped (a run where every case is SKIP has exit_code 77, never 0). SystemExit is an ERROR too
    (sys.exit inside fn must not end a CI job with status 0). KeyboardInterrupt (Ctrl-C) is not a case error: it stops the run and propagates,
    with no summary and no reports written.

    compute, storage, dequant: the precision the implementation declares (spec/tolerance.md):
    "f64", "f32", "f16", "bf16", or "data" for the case's own data type; storage None = compute.
    dequant: the type compressed weights are dequantised to before the GEMMs use them
    (spec/compressed.md; None = compute), e.g. "data" for a kernel that forms W_f in bf16.
    filter: a case-name glob or a list of them. expert_type: "gemm2" or "gemm3" (or the spec's
    GEMM2_BIAS_SWIGLU_CLAMP, GEMM3_SWIGLU; any case): only the cases of that expert type, which
    their names do not say (with filter, a case must match both). expect: an expectation file (known failures,
    XFAIL; cases not to run, SKIP; docs/moe-conform.md). shard: "I/N", this share of the suite's
    files, as `moe-conform run --shard` (a share holding none of the cases: exit_code 77, its
    report files written with no result; one case name in two files: exit_code 2). json, junit: report files to write (their folders
    are checked before any case runs). Prints the same table as `moe-conform run` (unless quiet)
    and returns a Summary; while it runs, moe-conform run's lines on stderr: one per case
    ("[3/12] PASS  my_fn  case") and, while one step (reading and checking a file, or fn on it)
    goes on, "[3/12] still running my_fn on FILE (30 s)" every 30 s (none when quiet).

    As `moe-conform run --suite`, where suite_dir has a MANIFEST.sha256 every golden file must
    match it, else nothing runs: exit_code 2, the files named in input_errors (manifest=False
    skips this check, as --no-manifest); and a file whose stored output or bounds disagree with
    the reference recomputed from its inputs is not run (exit_code 2, named in input_errors).

    fail_on_mistrusted: as `--fail-on-mistrusted`, a MISTRUSTED result (a pass whose bound cannot
    tell a right answer from a wrong one, spec/tolerance.md) gives exit_code 1, as a FAIL does, and
    the report text, json and junit say so; by default it gives 0.
    """
    filters = [] if filter is None else ([filter] if isinstance(filter, str) else list(filter))
    label = name or getattr(fn, "__name__", "python")
    for flag, path in (("json", json), ("junit", junit)):
        if path is not None:
            _check_report_path(flag, str(path))
    return _impl._run_suite(fn, str(suite_dir), compute, storage, dequant, filters, json, junit, label, quiet,
                            None if expect is None else str(expect), shard, bool(manifest), expert_type,
                            bool(fail_on_mistrusted))


class _Inputs(_abc.Mapping):
    """case.inputs: a read-only mapping of input name -> numpy array, each array made on its first
    access and the same object after that. A model-sized case's weights are converted only when
    asked for: a function that reads a compressed weight through case.dequantized(), or the hidden
    states alone, never pays for the rest (bf16 weights widen to float32, twice their size)."""

    __slots__ = ("_source", "_arrays", "_names")

    def __init__(self, source):
        self._source = source
        self._arrays = {}
        self._names = tuple(source.names())

    def __getitem__(self, name):
        try:
            return self._arrays[name]
        except KeyError:
            if name not in self._names:
                raise KeyError(name) from None
        array = self._arrays[name] = self._source.convert(name)
        return array

    def __contains__(self, name):
        return name in self._names

    def __iter__(self):
        return iter(self._names)

    def __len__(self):
        return len(self._names)

    def __repr__(self):
        return f"<moe_conform case inputs {list(self._names)}>"


def _check_report_path(flag, path):
    """A report that cannot be written is refused now, not after the whole suite ran."""
    folder = _os.path.dirname(path) or "."
    if path == "" or _os.path.isdir(path):
        raise InputError(f"{flag}={path!r}: give a file name")
    if not _os.path.isdir(folder):
        raise InputError(f"{flag}={path!r}: folder {folder} does not exist")
    if not _os.access(folder, _os.W_OK | _os.X_OK):
        raise InputError(f"{flag}={path!r}: folder {folder} is not writable")


def shrink(fn, case_file, out=None, compute="f32", storage=None, dequant=None, name=None, max_seconds=120.0,
           quiet=False):
    """Reduces a case that fn fails to a small one that fails the same way, as `moe-conform shrink`.

    fn is called as run_suite calls it, on ever smaller cases (fewer tokens, top-k slots, experts,
    hidden and intermediate features; then simpler values), each a new golden case whose reference
    is recomputed; an edit is kept only when fn still fails the same way (FAIL with the same first
    divergent stage, or ERROR with the same message up to its numbers). compute, storage, dequant:
    fn's declared precision, as for run_suite. out: the golden file to write (default
    <case name>_shrunk.h5 in the current folder; never case_file). max_seconds bounds the search
    (then the smallest case found is written and stopped_early says so). Prints what
    `moe-conform shrink` prints and a repro line (unless quiet), and returns a ShrinkResult: file,
    before, after, status, stage, reason, runs, edits, stable, stopped_early, summary, repro, and
    exit_code: moe-conform shrink's, 0, or 4 when not stable (fn did not fail the shrunk case the
    same way on two more runs: not deterministic, so the repro may pass; the file is written).

    A case fn does not fail raises InputError; so does a damaged golden file (GoldenFileError).
    KeyboardInterrupt and SystemExit in fn stop the search and propagate. The smallest failing
    case so far is written to out after every accepted edit: if fn crashes the process on a later
    candidate, out holds it (its description says the search had not finished).
    """
    label = name or getattr(fn, "__name__", "python")
    if out is not None:
        _check_report_path("out", str(out))
    return _impl._shrink(fn, str(case_file), None if out is None else str(out), compute, storage, dequant, label,
                         float(max_seconds), bool(quiet))

