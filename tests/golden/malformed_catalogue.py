#!/usr/bin/python3
"""The malformed-input catalogue: golden files broken in every way we know, each run through the
real command-line tools with its expected exit code and message fragment.

Usage: malformed_catalogue.py MOE_CONFORM MOE_GOLDEN SOURCE_DIR WORK_DIR [--only NAME...]

For every variant (made with h5py, or by editing bytes, from a bundled golden file):
  moe-conform run --backend reference,loop_f32 --case FILE   exit code and fragment as listed
  moe-golden inspect FILE                                     exit code and fragment as listed
  moe-golden complete FILE -o OUT  (variants that damage /inputs or the file itself): exit 2,
                                   and OUT is not written
and for every run: no crash (a signal), no hang (60 s), at most 1 GB of memory (peak RSS of the
tool and its worker processes), and never a PASS for a damaged file. Data outside the golden
file is a FIFO wherever a variant points at one: opening it would block, so a tool that tried
to read outside the file would hang and fail the check.

Prints one line per variant and check; exits 0 when all hold, 1 otherwise.
"""
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

import h5py
import numpy as np

TIMEOUT_S = 60
MAX_RSS_KB = 1 << 20  # 1 GiB
BASE = "gemm2_gptoss_openvino_f32.h5"  # every group, attribute and filter the format has


def run(cmd, timeout=TIMEOUT_S):
    """(exit code or -signal, output, peak RSS in KiB of the process and its children, seconds)"""
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    out = []
    reader = threading.Thread(target=lambda: out.append(p.stdout.read()))
    reader.start()
    timer = threading.Timer(timeout, lambda: os.killpg(p.pid, signal.SIGKILL))
    timer.start()
    _, status, usage = os.wait4(p.pid, 0)
    timer.cancel()
    reader.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.monotonic() - start
    text = (out[0] if out else b"").decode("utf-8", "replace")
    if elapsed >= timeout:
        return "timeout", text, usage.ru_maxrss, elapsed
    return p.returncode, text, usage.ru_maxrss, elapsed


class Catalogue:
    def __init__(self, source, work):
        self.source, self.work = source, work
        self.golden = os.path.join(source, "data", "golden")
        self.variants = []
        self.fifo = os.path.join(work, "outside.fifo")  # reading it would block forever
        os.mkfifo(self.fifo)

    def add(self, name, make, conform, inspect, fragment, complete=False, extra=()):
        """conform / inspect: expected exit codes; fragment: in both outputs, or a pair (for
        moe-conform, for inspect); None: no check. complete: also run `moe-golden complete`
        (expected exit 2, no output file)."""
        self.variants.append(dict(name=name, make=make, conform=conform, inspect=inspect, fragment=fragment,
                                  complete=complete, extra=list(extra)))

    def path(self, name):
        return os.path.join(self.work, name + ".h5")

    def copy(self, name, base=BASE):
        p = self.path(name)
        shutil.copy(os.path.join(self.golden, base), p)
        return p


# ------------------------------------------------------------------------------------------------
# Variant builders: each takes the catalogue and the variant name, returns the file to run.

def edit(fn, base=BASE):
    """A copy of `base` changed by fn(f) with h5py."""
    def make(cat, name):
        p = cat.copy(name, base)
        with h5py.File(p, "r+") as f:
            fn(f, cat)
        return p
    return make


def replace(group, name, cat_fn, keep_element_type=True):
    """Deletes group/name and lets cat_fn(f, group, old_data, cat) recreate it (with the old
    element_type attribute, unless keep_element_type is false)."""
    def fn(f, cat):
        old = f[group][name][()]
        et = f[group][name].attrs.get("element_type") if keep_element_type else None
        del f[group][name]
        d = cat_fn(f[group], name, old, cat)
        if d is not None and et is not None and isinstance(d, h5py.Dataset):
            d.attrs["element_type"] = et
    return fn


def set_attr(key, value):
    return edit(lambda f, cat: f.attrs.__setitem__(key, value))


def del_attr(key):
    return edit(lambda f, cat: f.attrs.__delitem__(key))


def raw(fn, base=BASE):
    """A copy of `base` whose bytes fn(bytearray) changes."""
    def make(cat, name):
        p = cat.copy(name, base)
        with open(p, "rb") as f:
            b = bytearray(f.read())
        fn(b)
        with open(p, "wb") as f:
            f.write(b)
        return p
    return make


def old_format(cat, name, base=BASE):
    """The base case copied by h5py with its default (oldest) format bounds: no metadata checksums."""
    p = cat.path(name)
    with h5py.File(os.path.join(cat.golden, base), "r") as src, h5py.File(p, "w", libver="earliest") as dst:
        for k, v in src.attrs.items():
            dst.attrs[k] = v
        for g in src:
            src.copy(src[g], dst, name=g)
    return p


def old_format_string_descriptor(offset, value):
    """An old-format copy (no metadata checksums) whose 'format' string attribute ("moe-golden")
    has byte `offset` of its descriptor (4-byte length, the 8-byte address of its global heap
    collection, a 4-byte object index) set to `value`: HDF5 follows a descriptor unchecked."""
    def make(cat, name, base=BASE):
        p = old_format(cat, name, base)
        with open(p, "rb") as f:
            b = bytearray(f.read())
        heap = b.find(b"GCOL")
        descriptor = len("moe-golden").to_bytes(4, "little") + heap.to_bytes(8, "little")
        at = b.find(descriptor)
        assert heap >= 0 and at >= 0, "no string descriptor found"
        b[at + offset] = value
        with open(p, "wb") as f:
            f.write(b)
        return p
    return make


def flip_at(signature, offset, bit=0, nth=0):
    """Flips one bit `offset` bytes after the nth occurrence of `signature`."""
    def fn(b):
        at = -1
        for _ in range(nth + 1):
            at = b.find(signature, at + 1)
        assert at >= 0, signature
        b[at + offset] ^= 1 << bit
    return fn


def chunk_flip(dataset):
    """Flips a bit inside the stored (compressed) bytes of a dataset's first chunk."""
    def make(cat, name):
        p = cat.copy(name)
        with h5py.File(p, "r") as f:
            offset = f[dataset].id.get_chunk_info(0).byte_offset
        with open(p, "r+b") as f:
            f.seek(offset + 5)
            byte = f.read(1)[0]
            f.seek(offset + 5)
            f.write(bytes([byte ^ 0x10]))
        return p
    return make


def special(kind):
    def make(cat, name):
        p = cat.path(name)
        if kind == "fifo":
            os.mkfifo(p)
        elif kind == "directory":
            os.mkdir(p)
        elif kind == "devnull":
            os.symlink("/dev/null", p)
        elif kind == "empty":
            open(p, "wb").close()
        elif kind == "text":
            with open(p, "w") as f:
                f.write("case,expert_type\nx,GEMM3_SWIGLU\n")
        elif kind == "truncated":
            shutil.copy(os.path.join(cat.golden, BASE), p)
            os.truncate(p, os.path.getsize(p) // 2)
        elif kind == "missing":
            pass
        return p
    return make


def regression(file_name):
    def make(cat, name):
        p = cat.path(name)
        shutil.copy(os.path.join(cat.source, "tests", "golden", "fuzz-regressions", file_name), p)
        return p
    return make


def chunked_unwritten(shape, dtype="f4"):
    return lambda g, n, old, cat: g.create_dataset(n, shape=shape, dtype=dtype, chunks=tuple(min(s, 64) for s in shape))


def define(cat):
    bad = 2
    # --- Data outside the file (refused; the FIFO would block any read of it) ---
    cat.add("external_storage_fifo", edit(replace("inputs", "weight_0", lambda g, n, old, cat: g.create_dataset(
        n, shape=old.shape, dtype=old.dtype, external=[(cat.fifo, 0, old.nbytes)]))), bad, bad,
        "external raw storage", complete=True)
    cat.add("external_storage_system_file", edit(replace("inputs", "bias_1", lambda g, n, old, cat: g.create_dataset(
        n, shape=(min(old.size, 8),), dtype="u1", external=[("/etc/hostname", 0, min(old.size, 8))]))), bad, bad,
        "external raw storage", complete=True)
    cat.add("external_storage_relative_path", edit(replace("inputs", "hidden_states", lambda g, n, old, cat: g.create_dataset(
        n, shape=old.shape, dtype=old.dtype, external=[("outside.fifo", 0, old.nbytes)]))), bad, bad,
        "external raw storage", complete=True)
    cat.add("external_storage_output", edit(replace("outputs", "output", lambda g, n, old, cat: g.create_dataset(
        n, shape=old.shape, dtype=old.dtype, external=[(cat.fifo, 0, old.nbytes)]))), bad, bad, "external raw storage")
    cat.add("external_link_dataset", edit(replace("inputs", "weight_1", lambda g, n, old, cat: g.__setitem__(
        n, h5py.ExternalLink(cat.fifo, "/inputs/weight_1")))), bad, bad, "external link", complete=True)
    cat.add("external_link_inputs_group", edit(lambda f, cat: (f.__delitem__("inputs"), f.__setitem__(
        "inputs", h5py.ExternalLink(cat.fifo, "/inputs")))), bad, bad, "external link", complete=True)
    cat.add("external_link_outputs_group", edit(lambda f, cat: (f.__delitem__("outputs"), f.__setitem__(
        "outputs", h5py.ExternalLink(cat.fifo, "/outputs")))), bad, bad, "external link")
    cat.add("external_link_stages_group", edit(lambda f, cat: (f.__delitem__("stages"), f.__setitem__(
        "stages", h5py.ExternalLink(cat.fifo, "/stages")))), bad, bad, "external link")
    cat.add("soft_link_through_external_link", edit(lambda f, cat: (
        f.__setitem__("elsewhere", h5py.ExternalLink(cat.fifo, "/inputs")), f["inputs"].__delitem__("weight_0"),
        f["inputs"].__setitem__("weight_0", h5py.SoftLink("/elsewhere/weight_0")))), bad, bad, "leaves the file",
        complete=True)
    cat.add("soft_link_dangling", edit(lambda f, cat: (f["inputs"].__delitem__("bias_0"), f["inputs"].__setitem__(
        "bias_0", h5py.SoftLink("/nowhere/bias_0")))), bad, bad, "does not exist", complete=True)
    for label, source in (("missing_source", "/nonexistent/source.h5"), ("fifo_source", None), ("same_file", ".")):
        def vds(g, n, old, cat, source=source):
            layout = h5py.VirtualLayout(shape=old.shape, dtype=old.dtype)
            layout[...] = h5py.VirtualSource(source or cat.fifo, "/inputs/bias_1_data", shape=old.shape)
            return g.create_virtual_dataset(n, layout, fillvalue=0)
        cat.add("virtual_dataset_" + label, edit(replace("inputs", "bias_1", vds)), bad, bad, "virtual dataset",
                complete=True)
    # --- Filters other than deflate, shuffle, fletcher32 (refused) ---
    for label, kwargs in (("lzf", dict(compression="lzf")), ("scaleoffset", dict(scaleoffset=10, chunks=(6, 1, 32))),
                          ("unregistered_plugin", dict(compression=32004, allow_unknown_filter=True, chunks=(6, 1, 32)))):
        cat.add("filter_" + label, edit(replace("inputs", "bias_0", lambda g, n, old, cat, kwargs=kwargs: g.create_dataset(
            n, data=old, **kwargs))), bad, bad, "filter", complete=True)
    # --- Not a regular HDF5 file ---
    cat.add("fifo_named_h5", special("fifo"), bad, bad, "FIFO", complete=True)
    cat.add("symlink_to_dev_null", special("devnull"), bad, bad, "character device", complete=True)
    cat.add("directory_named_h5", special("directory"), bad, bad, "directory", complete=True)
    cat.add("empty_file", special("empty"), bad, bad, "not an HDF5 file", complete=True)
    cat.add("text_file", special("text"), bad, bad, "not an HDF5 file", complete=True)
    cat.add("truncated_file", special("truncated"), bad, bad, "golden file", complete=True)
    cat.add("missing_file", special("missing"), bad, bad, ("no such file", "does not exist"), complete=True)
    # --- Memory: shapes the stored bytes cannot hold, budgets ---
    cat.add("huge_chunked_never_written", edit(replace("inputs", "weight_0", chunked_unwritten((6, 1 << 16, 1 << 12)))),
            bad, bad, "chunks are stored", complete=True)
    cat.add("huge_contiguous_never_written", edit(replace("inputs", "weight_1", lambda g, n, old, cat: g.create_dataset(
        n, shape=(6, 1 << 20, 1 << 10), dtype="f4"))), bad, bad, "never written", complete=True)
    cat.add("huge_output_never_written", edit(replace("outputs", "output", chunked_unwritten((1 << 20, 1 << 12), "f8"))),
            bad, bad, "chunks are stored")
    cat.add("partly_written_chunks", edit(replace("inputs", "hidden_states", lambda g, n, old, cat: g.create_dataset(
        n, shape=old.shape, dtype=old.dtype, chunks=(1, 32)).__setitem__(0, old[0]))), bad, bad, "chunks are stored",
        complete=True)
    cat.add("over_memory_budget", edit(lambda f, cat: None), bad, bad, "memory budget", extra=["--max-memory", "4K"])
    cat.add("zeros_bomb_wrong_shape", edit(replace("inputs", "weight_0", lambda g, n, old, cat: g.create_dataset(
        n, data=np.zeros((6, 4096, 4096), "f4"), chunks=(1, 256, 4096), compression="gzip", compression_opts=9))),
        bad, bad, "weight_0", complete=True)
    cat.add("too_many_members", edit(lambda f, cat: [f["stages"].create_dataset("s%d" % i, data=np.zeros(1))
                                                     for i in range(5000)]), bad, bad, "members")
    # --- Root attributes ---
    cat.add("attr_format_missing", del_attr("format"), bad, bad, "root attribute 'format'", complete=True)
    cat.add("attr_format_wrong", set_attr("format", "moe-silver"), bad, bad, "not a golden file", complete=True)
    cat.add("attr_format_version_3", set_attr("format_version", 3), bad, bad, "versions 1 to 2 only", complete=True)
    cat.add("attr_format_version_string", set_attr("format_version", "1"), bad, bad, "must be an integer", complete=True)
    cat.add("attr_case_missing", del_attr("case"), bad, bad, "root attribute 'case'", complete=True)
    cat.add("attr_case_array", set_attr("case", np.array([b"a", b"b"])), bad, bad, "single value", complete=True)
    # A case no result file can name; a fixed-length string cut at an embedded NUL (ran as "before").
    cat.add("attr_case_empty", set_attr("case", ""), bad, bad, "root attribute 'case': empty", complete=True)
    cat.add("attr_case_text_after_nul", set_attr("case", np.bytes_(b"before\x00after")), bad, bad,
            "text after a NUL byte", complete=True)
    cat.add("attr_expert_type_unknown", set_attr("expert_type", "GEMM4"), bad, bad, "expert_type", complete=True)
    cat.add("attr_convention_unknown", set_attr("convention", "pytorch"), bad, bad, "convention", complete=True)
    cat.add("attr_expert_alpha_string", set_attr("expert_alpha", "seven"), bad, bad, "must be a number", complete=True)
    cat.add("attr_swish_beta_disagrees", set_attr("swish_beta", 1.0), bad, bad, "swish_beta", complete=True)
    cat.add("attr_gate_lane_disagrees", set_attr("gate_lane", 1), bad, bad, "gate_lane", complete=True)
    cat.add("attr_weight_layout_disagrees", set_attr("weight_layout", "KN"), bad, bad, "weight_layout", complete=True)
    cat.add("attr_seed_negative", set_attr("seed", np.int64(-1)), bad, bad, "must not be negative", complete=True)
    cat.add("attr_exact_2", set_attr("exact", np.uint8(2)), bad, bad, "must be 0 or 1", complete=True)
    cat.add("attr_number_too_wide", set_attr("expert_beta", np.array(b"x" * 32).view("V32")), bad, bad,
            "expert_beta", complete=True)
    cat.add("attr_fixed_string_2mib", set_attr("generator", np.bytes_(b"g" * (2 << 20))), bad, bad, "generator",
            complete=True)
    # --- Groups and datasets ---
    cat.add("inputs_missing", edit(lambda f, cat: f.__delitem__("inputs")), bad, bad, "group /inputs", complete=True)
    cat.add("inputs_not_a_group", edit(lambda f, cat: (f.__delitem__("inputs"), f.create_dataset("inputs", data=[1]))),
            bad, bad, "is not a group", complete=True)
    cat.add("input_unknown_name", edit(lambda f, cat: f["inputs"].create_dataset("weight_3", data=np.zeros(3, "f4"))),
            bad, bad, "unknown input name", complete=True)
    cat.add("element_type_unknown", edit(lambda f, cat: f["inputs/weight_0"].attrs.__setitem__("element_type", "f8")),
            bad, bad, "unknown element type", complete=True)
    cat.add("element_type_disagrees", edit(lambda f, cat: f["inputs/weight_0"].attrs.__setitem__("element_type", "f16")),
            bad, bad, "element_type is 'f16'", complete=True)
    cat.add("bf16_without_element_type", edit(replace("inputs", "bias_0", lambda g, n, old, cat: g.create_dataset(
        n, data=old.view("u2")[..., ::2].copy()), keep_element_type=False)), bad, bad, "does not determine",
        complete=True)
    cat.add("input_compound_type", edit(replace("inputs", "bias_1", lambda g, n, old, cat: g.create_dataset(
        n, data=np.zeros(4, dtype=[("a", "f4"), ("b", "i4")])))), bad, bad, "compound", complete=True)
    cat.add("input_string_dataset", edit(replace("inputs", "bias_1", lambda g, n, old, cat: g.create_dataset(
        n, data=np.array([b"abc"])))), bad, bad, "bias_1", complete=True)
    cat.add("input_scalar_dataset", edit(replace("inputs", "bias_1", lambda g, n, old, cat: g.create_dataset(
        n, data=np.float32(1.0)))), bad, bad, "simple dataspace", complete=True)
    # inspect shows a file without /outputs/output (an inputs-only file, for `complete`).
    cat.add("output_missing", edit(lambda f, cat: f["outputs"].__delitem__("output")), bad, 0,
            ("dataset /outputs/output: missing", "no /outputs/output"))
    cat.add("output_f32", edit(replace("outputs", "output", lambda g, n, old, cat: g.create_dataset(
        n, data=old.astype("f4")), keep_element_type=False)), bad, bad, "must be f64")
    cat.add("output_f32_declared_f64", edit(replace("outputs", "output", lambda g, n, old, cat: g.create_dataset(
        n, data=old.astype("f4")))), bad, bad, "stored as 32-bit float")
    cat.add("output_shape_wrong", edit(replace("outputs", "output", lambda g, n, old, cat: g.create_dataset(
        n, data=old[:, :16].copy()))), bad, bad, "differs from /outputs/output [7, 16]")
    cat.add("output_is_a_group", edit(lambda f, cat: (f["outputs"].__delitem__("output"), f["outputs"].create_group(
        "output"))), bad, bad, "is not a dataset")
    cat.add("bound_shape_wrong", edit(replace("outputs", "bound_act_eval", lambda g, n, old, cat: g.create_dataset(
        n, data=old[:3].copy()))), bad, bad, "/outputs/bound_act_eval")
    # --- Problems the op rejects ---
    def topk(value):
        return edit(lambda f, cat: f["inputs/router_topk_output_indices"].__setitem__((0, 0), value))
    cat.add("topk_index_out_of_range", topk(6), bad, bad, "outside [0, E = 6)", complete=True)
    cat.add("topk_index_negative", topk(-1), bad, bad, "outside [0, E = 6)", complete=True)
    cat.add("topk_expert_twice", edit(lambda f, cat: f["inputs/router_topk_output_indices"].__setitem__(
        (0, 1), f["inputs/router_topk_output_indices"][0, 0])), bad, bad, "twice", complete=True)
    cat.add("hidden_size_mismatch", edit(replace("inputs", "hidden_states", lambda g, n, old, cat: g.create_dataset(
        n, data=old[:, :31].copy()))), bad, bad, "differs from /inputs/hidden_states [7, 31]")
    cat.add("hidden_size_mismatch_inputs_only", edit(lambda f, cat: (f.__delitem__("outputs"), f.__delitem__("stages"),
        replace("inputs", "hidden_states", lambda g, n, old, cat: g.create_dataset(n, data=old[:, :31].copy()))(f, cat))),
        bad, bad, ("/outputs/output: missing", "hidden size"), complete=True)
    # --- Stored results that do not belong to the inputs (valid checksums) ---
    def outputs(name, fn):
        return edit(lambda f, cat: f["outputs/" + name].__setitem__(Ellipsis, fn(f["outputs/" + name][()])))
    cat.add("bound_negative", outputs("bound_down_acc", lambda b: -b), bad, bad, "must be >= 0")
    cat.add("bound_scaled_1e300", outputs("bound_first_acc", lambda b: b * 1e300), bad, bad, "do not belong")
    cat.add("bound_zeroed", outputs("bound_act_eval", lambda b: b * 0), bad, bad, "do not belong")
    cat.add("bound_infinite", outputs("bound_down_store", lambda b: b + np.inf), bad, bad, "do not belong")
    cat.add("bound_nan", outputs("bound_first_store", lambda b: b * np.nan), bad, bad, "do not belong")
    cat.add("output_zeroed", outputs("output", lambda o: o * 0), bad, bad, "does not belong")
    cat.add("output_one_element_off", edit(lambda f, cat: f["outputs/output"].__setitem__(
        (6, 31), f["outputs/output"][6, 31] + 1e-3)), bad, bad, "does not belong")
    cat.add("input_changed_after_generation", edit(lambda f, cat: f["inputs/weight_1"].__setitem__(
        (2, 3, 4), 0.5)), bad, bad, "does not belong")
    cat.add("input_rewritten_without_checksum", edit(replace("inputs", "hidden_states", lambda g, n, old, cat: g.create_dataset(
        n, data=old * 2))), bad, bad, "does not belong")
    # --- Damaged bytes (checksums) ---
    cat.add("flip_chunk_data_input", chunk_flip("inputs/weight_0"), bad, bad, "checksum", complete=True)
    cat.add("flip_chunk_data_output", chunk_flip("outputs/output"), bad, bad, "checksum")
    cat.add("flip_chunk_data_bound", chunk_flip("outputs/bound_down_store"), bad, bad, "checksum")
    cat.add("flip_superblock", raw(flip_at(b"\x89HDF\r\n\x1a\n", 12, 3)), bad, bad, "golden file", complete=True)
    cat.add("flip_object_header", raw(flip_at(b"OHDR", 40, 1, nth=2)), bad, bad, "golden file", complete=True)
    cat.add("flip_global_heap_object_size", raw(flip_at(b"GCOL", 16 + 8 + 3, 2)), bad, bad, "global heap",
            complete=True)
    cat.add("flip_global_heap_size", raw(flip_at(b"GCOL", 8 + 4, 0)), bad, bad, "global heap", complete=True)
    cat.add("flip_object_header_dataset", raw(flip_at(b"OHDR", 30, 5, nth=12)), bad, bad, "golden file", complete=True)
    cat.add("flip_btree_header", raw(flip_at(b"BTHD", 9, 2)), bad, bad, "golden file", complete=True)
    cat.add("flip_fractal_heap_header", raw(flip_at(b"FRHP", 12, 6)), bad, bad, "golden file", complete=True)
    cat.add("flip_continuation_chunk", raw(flip_at(b"OCHK", 6, 1, nth=3)), bad, bad, "golden file", complete=True)
    # String descriptors that their heap does not back: a length of about 4 GiB (HDF5 allocated it
    # before reading), an object index the collection does not hold (HDF5 read through a wild
    # pointer), a collection address where the file holds none.
    cat.add("string_length_4gib_old_format", old_format_string_descriptor(3, 0xFF), bad, bad, "string descriptor gives",
            complete=True)
    cat.add("string_index_old_format", old_format_string_descriptor(14, 0x40), bad, bad, "does not hold", complete=True)
    cat.add("string_address_old_format", old_format_string_descriptor(4, 0x08), bad, bad, "holds no collection",
            complete=True)
    # --- Files that crashed or hung HDF5 (tests/golden/fuzz-regressions) ---
    for file_name in ("sigsegv-old-format-string-descriptor.h5", "hang-global-heap-free-space-zero.h5",
                      "sigabrt-global-heap-object-size.h5", "sigsegv-global-heap-object-size.h5",
                      "hang-old-format-global-heap.h5"):
        cat.add("regression_" + file_name[:-3].replace("-", "_"), regression(file_name), bad, bad, "golden file",
                complete=True)
    # --- Valid files: controls (exit 0) ---
    cat.add("valid_bundled_case", edit(lambda f, cat: None), 0, 0, ("2 passed", "agree with the reference"))
    cat.add("valid_old_format", old_format, 0, 0, ("2 passed", "NOT checksummed"))
    cat.add("valid_soft_link_in_file", edit(lambda f, cat: (f.move("inputs/weight_1", "w1"), f["inputs"].__setitem__(
        "weight_1", h5py.SoftLink("/w1")))), 0, 0, None)
    cat.add("valid_case_name_with_escapes", set_attr("case", "evil\nname\x1b[2J\x07"), 0, 0, "evil\\x0aname\\x1b[2J")
    # U+009B (a CSI in a UTF-8 terminal), U+202E (right-to-left override), a backslash (doubled).
    cat.add("valid_case_name_with_c1_bidi_backslash", set_attr("case", "csi\u009b31m rtl\u202eexe.fdp a\\b"), 0, 0,
            "csi\\xc2\\x9b31m rtl\\xe2\\x80\\xaeexe.fdp a\\\\b")


def check_variant(cat, v, tools):
    problems = []
    try:
        path = v["make"](cat, v["name"])
    except Exception as e:  # noqa: BLE001 - a builder failure is a test failure
        return ["cannot build the variant: %r" % e]
    damaged = v["conform"] != 0
    runs = [("moe-conform", [tools["conform"], "run", "--backend", "reference,loop_f32", "--case", path] + v["extra"],
             v["conform"]),
            ("inspect", [tools["golden"], "inspect", path] + v["extra"], v["inspect"])]
    if v["complete"]:
        out = os.path.join(cat.work, v["name"] + ".completed.h5")
        runs.append(("complete", [tools["golden"], "complete", path, "-o", out], 2))
    for tool, cmd, want in runs:
        rc, text, rss_kb, secs = run(cmd)
        where = "%s: %s" % (v["name"], tool)
        if rc == "timeout":
            problems.append("%s: hung (killed after %d s)" % (where, TIMEOUT_S))
            continue
        if isinstance(rc, int) and rc < 0:
            problems.append("%s: crashed (signal %d)" % (where, -rc))
        if rc != want:
            problems.append("%s: exit %s, expected %s; output:\n%s" % (where, rc, want, text[-2000:]))
        fragment = v["fragment"]
        if isinstance(fragment, tuple):
            fragment = fragment[0] if tool == "moe-conform" else fragment[1]
        if fragment and tool != "complete" and fragment not in text:
            problems.append("%s: output lacks %r:\n%s" % (where, fragment, text[-2000:]))
        if rss_kb > MAX_RSS_KB:
            problems.append("%s: peak memory %d MiB (more than 1 GiB)" % (where, rss_kb >> 10))
        if damaged and tool == "moe-conform" and "\nPASS " in text:
            problems.append("%s: a damaged file was reported PASS" % where)
        if "\x1b" in text:
            problems.append("%s: a raw escape character reached the output" % where)
        if tool == "complete" and os.path.exists(out):
            problems.append("%s: wrote %s from a file it should refuse" % (where, out))
    return problems


def main(argv):
    if len(argv) < 5:
        print(__doc__)
        return 2
    tools = {"conform": argv[1], "golden": argv[2]}
    source, work = argv[3], argv[4]
    only = set(argv[argv.index("--only") + 1:]) if "--only" in argv else None
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cat = Catalogue(source, work)
    define(cat)
    failed = 0
    for v in cat.variants:
        if only and v["name"] not in only:
            continue
        problems = check_variant(cat, v, tools)
        print(("ok    " if not problems else "FAIL  ") + v["name"], flush=True)
        for p in problems:
            print("      " + p.replace("\n", "\n      "), flush=True)
        failed += bool(problems)
    total = len(cat.variants) if not only else len(only)
    print("%d variants, %d passed, %d failed" % (total, total - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
