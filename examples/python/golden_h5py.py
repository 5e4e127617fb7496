#!/usr/bin/python3
"""Golden files in, result files out, with numpy and h5py alone: door 1 of README.md on a machine
that cannot run moe-conform (a GPU box with PyTorch and nothing else).

Copy this one file there with the suite folder, run your kernel on every case, bring the result
folder back and let moe-conform judge it:

    python3 golden_h5py.py data/golden /tmp/results        # this file's numpy stand-in, every case
    build/bin/moe-conform check --suite data/golden --results /tmp/results

As a module (what your own driver does):

    import golden_h5py as g, torch
    case = g.read_case("data/golden/compressed_u4_gemm3_group4_zp.h5")
    a = case["attrs"]            # swish_beta, clamp_limit, gate_lane, weight_layout, routing_layout, T..K
    x = torch.from_numpy(case["inputs"]["hidden_states"]).cuda()   # bf16 cases: float32 values,
    x = x.to(torch.bfloat16) if case["data_type"] == "bf16" else x   # so this cast is exact
    w0 = g.dequantize(case, "weight_0")        # compressed: float64 [E, N, K], exact; or pack_4bit(codes)
    y = my_kernel(x, ...)                      # numpy array or torch tensor (bf16 included), any device
    g.write_result(os.path.join("/tmp/results", os.path.basename(case["path"])), case, y,
                   compute_type="f32", storage_type="data")   # the precision your kernel computes in

Everything here follows the specs, not moe-conform's code: spec/golden-format.md (datasets and
element types), spec/compressed.md (the compressed weights and the float codes' value tables),
spec/README.md sections 4-6 (what the attributes mean, the arithmetic) and spec/results-format.md.
tests/python/check_golden_h5py_example.py checks read_case() and dequantize() bit for bit against
moe_conform's case.attrs and case.dequantized() on every bundled case.
"""
import hashlib
import os
import sys

import h5py
import numpy as np


# --- Element types (spec/golden-format.md, "Element types") ---------------------------------------

def _minifloat_values(ebits, mbits, bias):
    """Every code of a small binary float (sign bit on top, exponent field 0 = subnormals) as
    float64, before its NaN/infinity codes are set. Exact: at most 4 significand bits."""
    codes = np.arange(1 << (1 + ebits + mbits))
    exp = (codes >> mbits) & ((1 << ebits) - 1)
    mant = (codes & ((1 << mbits) - 1)).astype(np.float64)
    magnitude = np.where(exp == 0, np.ldexp(mant, 1 - bias - mbits),
                         np.ldexp(mant + (1 << mbits), exp - bias - mbits))
    return np.where(codes >> (ebits + mbits), -magnitude, magnitude)  # -0.0 for the negative zero code


# spec/compressed.md, section 3. Each NaN code decodes to numpy's one quiet NaN (as moe-conform's
# decoder does), so dequantised NaNs compare bit for bit.
E2M1 = _minifloat_values(2, 1, 1)                 # 0, 0.5, 1, 1.5, 2, 3, 4, 6 and negatives; no NaN, no inf
E4M3 = _minifloat_values(4, 3, 7)                 # "fn": exponent 15 holds numbers up to 448 ...
E4M3[[0x7F, 0xFF]] = np.nan                       # ... except S.1111.111, the only NaN; no infinity
E5M2 = _minifloat_values(5, 2, 15)                # IEEE-like: exponent 31 is inf (mantissa 0) or NaN
E5M2[0x7C], E5M2[0xFC] = np.inf, -np.inf
E5M2[[0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF]] = np.nan
E8M0 = np.ldexp(1.0, np.arange(256) - 127)        # MX scale: 2^(code - 127), no sign, no zero ...
E8M0[0xFF] = np.nan                               # ... 0xFF is NaN, which no valid case holds
CODE_VALUES = {"f4e2m1": E2M1, "f8e4m3": E4M3, "f8e5m2": E5M2, "f8e8m0": E8M0}

# What read_case() hands out per element type: the same arrays as moe_conform's case.inputs.
# Float codes stay codes (uint8) so a kernel can take them as they are (pack 4-bit ones first:
# pack_4bit); their values are CODE_VALUES[type][codes], or dequantize() for a whole weight.
NUMPY_TYPE = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": np.float32,
              "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u4": np.uint8, "i8": np.int8, "i4": np.int8,
              "f4e2m1": np.uint8, "f8e4m3": np.uint8, "f8e5m2": np.uint8, "f8e8m0": np.uint8}
COMPRESSED = ("u8", "i8", "u4", "i4", "f4e2m1", "f8e4m3", "f8e5m2")
# A dataset without element_type is accepted only where its stored type says it unambiguously.
_GUESS = {("f", 8): "f64", ("f", 4): "f32", ("f", 2): "f16", ("i", 4): "i32", ("i", 8): "i64"}


def bf16_to_float32(bits):
    """bf16 bit patterns (uint16) -> float32 values, exactly: bf16 is float32's upper half."""
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16(values):
    """float32 -> bf16 bit patterns (uint16), rounded to nearest, ties to even; NaN stays NaN."""
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), ((u >> 16) | 0x40).astype(np.uint16), rounded)  # quiet, sign kept


def pack_4bit(codes):
    """4-bit codes one per byte [..., K] -> two per byte [..., K/2], element 2i in the low nibble
    (spec/compressed.md, section 4: what OpenVINO's kernels and GPT-OSS's MXFP4 blocks hold)."""
    c = np.asarray(codes).astype(np.uint8) & 0xF  # i4: two's complement nibble
    return c[..., 0::2] | (c[..., 1::2] << 4)


def _text(value):
    """A root attribute as Python: h5py gives str, or bytes for fixed-length strings, or a numpy
    scalar or one-element array (golden-format.md allows both)."""
    if isinstance(value, bytes):
        return value.decode().rstrip("\0 ")
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ValueError(f"attribute of {value.size} elements where one is expected")
        value = value.reshape(-1)[0]
    return value.item() if isinstance(value, np.generic) else value


def _element_type(name, ds):
    if "element_type" in ds.attrs:
        t = _text(ds.attrs["element_type"])
    else:
        t = _GUESS.get((ds.dtype.kind, ds.dtype.itemsize))
    if t not in NUMPY_TYPE:
        raise ValueError(f"/inputs/{name}: element type {t!r} (a 1- or 2-byte integer needs element_type)")
    return t


# --- Attributes (spec/README.md, sections 4 and 5) -------------------------------------------------

# (expert_alpha, expert_beta) where a file leaves them out: each convention's defaults.
DEFAULTS = {"spec": (1.0, 0.0), "openvino": (0.0, 1.0)}


def resolve(expert_type, convention, alpha, beta, gate_idx=None):
    """The five parameters a kernel needs, from the op's attributes (spec/README.md, section 5):
    what alpha and beta mean depends on the convention; gate_idx exists in openvino's alone."""
    gemm2 = expert_type == "GEMM2_BIAS_SWIGLU_CLAMP"
    if expert_type not in ("GEMM2_BIAS_SWIGLU_CLAMP", "GEMM3_SWIGLU"):
        raise ValueError(f"unknown expert_type {expert_type!r}")
    if convention == "spec":  # the public op text: alpha is swish beta, beta the clamp limit
        if gate_idx is not None:
            raise ValueError("gate_idx is not part of the spec convention")
        r = dict(swish_beta=alpha, clamp_limit=beta if gemm2 else 0.0, gate_lane=1 if gemm2 else 0,
                 weight_layout="KN" if gemm2 else "NK", routing_layout="dense")
    elif convention == "openvino":  # OpenVINO's code: the other way round, and gate_idx picks the lane
        g = 0 if gate_idx is None else gate_idx
        if g not in (0, 1):
            raise ValueError(f"gate_idx = {g} (expected 0 or 1)")
        r = dict(swish_beta=beta, clamp_limit=alpha if gemm2 else 0.0, gate_lane=g if gemm2 else 0,
                 weight_layout="NK", routing_layout="compact")
    else:
        raise ValueError(f"unknown convention {convention!r}")
    if not np.isfinite(r["swish_beta"]) or (gemm2 and not r["clamp_limit"] >= 0):
        raise ValueError(f"swish beta {r['swish_beta']} must be finite, clamp limit {r['clamp_limit']} >= 0")
    return r


def read_case(path):
    """One golden file as a dict: name, path, sha256 (of the file's bytes: write_result puts it in
    the result), expert_type, convention, data_type (hidden_states' element type), exact, T, H, I,
    E, K, attrs (the keys of moe_conform's case.attrs: expert_type, convention, expert_alpha,
    expert_beta, gate_idx, the five resolved parameters, T, H, I, E, K), inputs (name -> numpy
    array of values; bf16 widened to float32, f16 kept float16 (.astype(np.float32) is exact);
    compressed weights, scales and zero points as stored, one element per byte), input_types
    (name -> element type), group_size (compressed weight -> K / G), reference (f64 output)."""
    digest = hashlib.sha256()
    with open(path, "rb") as raw:
        for block in iter(lambda: raw.read(1 << 20), b""):
            digest.update(block)
    with h5py.File(path, "r") as f:
        root = {k: _text(v) for k, v in f.attrs.items()}
        if root.get("format") != "moe-golden" or root.get("format_version") not in (1, 2):
            raise ValueError(f"{path}: not a moe-golden file of version 1 or 2")
        inputs, types, group_size = {}, {}, {}
        for name, ds in f["inputs"].items():
            t = types[name] = _element_type(name, ds)
            data = ds[()]
            data = data.astype(data.dtype.newbyteorder("="))  # any byte order may be stored
            inputs[name] = bf16_to_float32(data) if t == "bf16" else data.astype(NUMPY_TYPE[t])
            if "group_size" in ds.attrs:
                group_size[name] = int(_text(ds.attrs["group_size"]))
        reference = f["outputs/output"][()].astype(np.float64) if "outputs/output" in f else None
    convention = root["convention"]
    if convention not in DEFAULTS:
        raise ValueError(f"{path}: unknown convention {convention!r}")
    attrs = dict(expert_type=root["expert_type"], convention=convention,
                 expert_alpha=float(root.get("expert_alpha", DEFAULTS[convention][0])),
                 expert_beta=float(root.get("expert_beta", DEFAULTS[convention][1])),
                 gate_idx=int(root["gate_idx"]) if "gate_idx" in root else None)  # absent stays None
    attrs.update(resolve(attrs["expert_type"], convention, attrs["expert_alpha"], attrs["expert_beta"],
                         attrs["gate_idx"]))
    for key in ("swish_beta", "clamp_limit", "gate_lane", "weight_layout", "routing_layout"):
        # Stored too, for readers that skip resolve(); a file where they disagree is malformed.
        if key in root and root[key] != attrs[key]:
            raise ValueError(f"{path}: stored {key} = {root[key]!r}, the attributes resolve to {attrs[key]!r}")
    hidden, w0 = inputs["hidden_states"], inputs["weight_0"]
    n0 = w0.shape[1] if attrs["weight_layout"] == "NK" else w0.shape[2]  # compressed weights are always NK
    gemm2 = attrs["expert_type"] == "GEMM2_BIAS_SWIGLU_CLAMP"
    dims = dict(T=int(np.prod(hidden.shape[:-1])), H=hidden.shape[-1], I=n0 // 2 if gemm2 else n0,
                E=w0.shape[0], K=inputs["router_topk_output_indices"].shape[-1])
    attrs.update(dims)
    return dict(name=root["case"], path=os.fspath(path), sha256=digest.hexdigest(), expert_type=attrs["expert_type"],
                convention=attrs["convention"], data_type=types["hidden_states"], exact=bool(root.get("exact", 0)),
                attrs=attrs, inputs=inputs, input_types=types, group_size=group_size, reference=reference, **dims)


# --- Compressed weights (spec/compressed.md, section 1) --------------------------------------------

def _values(array, element_type):
    """Stored codes or numbers -> float64 values (exact)."""
    table = CODE_VALUES.get(element_type)
    return table[array] if table is not None else np.asarray(array, dtype=np.float64)


def dequantize(case, weight_name, experts=None):
    """W_f[e, n, k] = (W[e, n, k] - Z[e, n', g]) * S[e, n', g], g = k // GS, n' = n or 0 for a shared
    scale row, as float64 [E, N, K] (or [len(experts), N, K], in the order given). Exact: every
    product fits float64 (spec/compressed.md), so the result is bit for bit the reference's."""
    inputs, types = case["inputs"], case["input_types"]
    if types.get(weight_name) not in COMPRESSED:
        raise ValueError(f"{weight_name} is not a compressed weight of case {case['name']}")
    codes = inputs[weight_name]
    E, N, K = codes.shape
    chosen = np.arange(E) if experts is None else np.asarray(list(experts), dtype=np.int64).reshape(-1)
    if np.any((chosen < 0) | (chosen >= E)):  # -1 (a dropped slot) must not become expert E - 1
        raise ValueError(f"{weight_name}: expert indices {chosen.tolist()} outside 0 .. {E - 1}")
    scale_name, zero_name = weight_name + "_scale", weight_name + "_zero_point"
    scale = inputs[scale_name]
    G = scale.shape[2]  # [E, N or 1, G] or [E, N or 1, G, 1]: the trailing 1 is dropped below
    if types[scale_name] == "f8e8m0" and np.any(scale == 0xFF):
        raise ValueError(f"{scale_name}: the E8M0 NaN code 0xFF; a block's scale must be a number")
    s = _values(scale.reshape(E, -1, G)[chosen], types[scale_name])
    # No zero point: subtract 0.0 anyway, as the reference does (-0.0 - 0.0 stays -0.0).
    z = _values(inputs[zero_name].reshape(E, -1, G)[chosen], types[zero_name]) if zero_name in inputs \
        else np.zeros_like(s)
    gs = K // G  # the file's group_size attribute, where present, says the same
    w = _values(codes[chosen], types[weight_name])
    return (w - np.repeat(z, gs, axis=2)) * np.repeat(s, gs, axis=2)  # [.., 1, K] broadcasts over N


# --- Result files (spec/results-format.md) ---------------------------------------------------------

STAGES = {"GEMM2_BIAS_SWIGLU_CLAMP": ("gate_up", "act", "down"), "GEMM3_SWIGLU": ("gate", "up", "act", "down")}


def _floating(name, x):
    """(array, element_type) for one dataset. numpy has no bfloat16: a torch.bfloat16 tensor, an
    ml_dtypes bfloat16 array (JAX) or a uint16 array of bf16 bits is stored as bf16 bits with
    element_type "bf16", as golden files store them; float16/32/64 as they are."""
    if type(x).__module__.startswith("torch"):
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            import torch  # a torch tensor came in, so torch is there
            return x.view(torch.int16).numpy().view(np.uint16), "bf16"
        x = x.numpy()
    x = np.asarray(x)
    if x.dtype.name == "bfloat16" or x.dtype == np.uint16:
        return x.view(np.uint16), "bf16"
    types = {np.dtype(np.float64): "f64", np.dtype(np.float32): "f32", np.dtype(np.float16): "f16"}
    if x.dtype not in types:
        raise TypeError(f"{name}: {x.dtype} is not a floating type (float64, float32, float16, bf16)")
    return x, types[x.dtype]


def write_result(path, case, output, compute_type, storage_type, dequant_type=None,
                 implementation="golden_h5py", stages=None):
    """Writes what a kernel computed for `case` (read_case's dict) as a moe-result file. The
    precision is what the bound is derived from (spec/tolerance.md): f64, f32, f16, bf16, or
    "data" for the case's own type (written as that type: the file itself takes only the four).
    stages: optional {name: [T, K, features]} (GEMM2 gate_up, act, down; GEMM3 gate, up, act,
    down), so a failure names the first stage that leaves its bounds. Atomic: a crash half-way
    leaves a .tmp file, never a partial result that check would read."""
    def precision(t):
        t = case["data_type"] if t == "data" else t
        if t not in ("f64", "f32", "f16", "bf16"):
            raise ValueError(f"precision {t!r}: expected f64, f32, f16, bf16 or data")
        return t
    out, out_type = _floating("output", output)
    if out.shape != case["inputs"]["hidden_states"].shape:  # check refuses it (exit 2): say so here
        raise ValueError(f"output shape {out.shape}, the case's hidden_states is "
                         f"{case['inputs']['hidden_states'].shape}")
    datasets = {"outputs/output": (out, out_type)}
    for name, value in (stages or {}).items():
        if name not in STAGES[case["expert_type"]]:
            raise ValueError(f"stage {name!r}: {case['expert_type']} has {STAGES[case['expert_type']]}")
        datasets["stages/" + name] = _floating(name, value)
    attrs = dict(format="moe-result", format_version=1, case=case["name"], golden_sha256=case["sha256"],
                 implementation=implementation, compute_type=precision(compute_type),
                 storage_type=precision(storage_type))
    if dequant_type is not None:
        attrs["dequant_type"] = precision(dequant_type)
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs.update(attrs)
            for where, (data, element_type) in datasets.items():
                f.create_dataset(where, data=data).attrs["element_type"] = element_type
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


# --- A stand-in kernel: the op of spec/README.md section 6 in numpy --------------------------------

def numpy_moe(case):
    """The op in float64 (inputs widened exactly, compressed weights dequantised exactly), output
    rounded to the case's data type. Replace this with your kernel."""
    a, x = case["attrs"], case["inputs"]
    T, H, E, K = a["T"], a["H"], a["E"], a["K"]
    f64 = lambda name: np.asarray(x[name], dtype=np.float64)

    def weight(name):  # [E, N, K] whichever layout the case uses
        if name + "_scale" in x:
            return dequantize(case, name)
        return f64(name) if a["weight_layout"] == "NK" else f64(name).transpose(0, 2, 1)

    def bias(name, width):  # an absent bias is a zero bias; [E, 1, N] and [E, N] both taken
        return f64(name).reshape(E, width) if name in x else np.zeros((E, width))

    h = f64("hidden_states").reshape(T, H)
    idx = x["router_topk_output_indices"].reshape(T, K).astype(np.int64)
    routing = f64("routing_weights")
    if a["routing_layout"] == "compact":  # [T, K], by slot
        w = routing.reshape(T, K)
    else:  # dense [E, T, 1] and its variants: w(t, e) = routing[e, t]
        w = routing.reshape(E, T)[idx, np.arange(T)[:, None]]
    beta, L, g = a["swish_beta"], a["clamp_limit"], a["gate_lane"]
    swish = lambda v: v / (1.0 + np.exp(-beta * v))
    down = np.zeros((T, K, H))
    weights = [weight(n) for n in ("weight_0", "weight_1", "weight_2") if n in x]
    with np.errstate(all="ignore"):  # NaN and Inf cases propagate as IEEE arithmetic says
        for e in np.unique(idx):
            t, k = np.nonzero(idx == e)  # the (token, slot) pairs routed to expert e
            if a["expert_type"] == "GEMM2_BIAS_SWIGLU_CLAMP":
                gate_up = h[t] @ weights[0][e].T + bias("bias_0", 2 * a["I"])[e]
                gate, lin = gate_up[:, g::2], gate_up[:, 1 - g::2]
                capped = np.where(np.isnan(gate) | (gate < L), gate, L)  # min(gate, L), no lower bound
                act = (np.clip(lin, -L, L) + 1.0) * swish(capped)       # clip keeps NaN
                down[t, k] = act @ weights[1][e].T + bias("bias_1", H)[e]
            else:
                act = swish(h[t] @ weights[0][e].T) * (h[t] @ weights[1][e].T)
                down[t, k] = act @ weights[2][e].T
        out = np.zeros((T, H))
        for j in range(K):  # each token's experts in ascending id order
            slot = np.argsort(idx, axis=1)[:, j]
            out = out + w[np.arange(T), slot][:, None] * down[np.arange(T), slot]
    out = out.reshape(x["hidden_states"].shape)
    with np.errstate(over="ignore"):  # beyond the type's range is +-inf, as the reference's rounding gives
        out32 = out.astype(np.float32)
        return {"f64": out, "f32": out32, "f16": out.astype(np.float16),  # numpy rounds to nearest even
                "bf16": float32_to_bf16(out32)}[case["data_type"]]


def main(argv):
    if len(argv) != 3:
        sys.exit(f"usage: {argv[0]} SUITE_DIR OUT_DIR   (then: moe-conform check --suite SUITE_DIR --results OUT_DIR)")
    suite, out_dir = argv[1], argv[2]
    os.makedirs(out_dir, exist_ok=True)
    files = sorted(n for n in os.listdir(suite) if n.endswith(".h5"))
    for i, file_name in enumerate(files, 1):
        case = read_case(os.path.join(suite, file_name))
        output = numpy_moe(case)
        # Computed in float64, so within what an f32 kernel is allowed; f64 cases declare f64.
        declared = "f64" if case["data_type"] == "f64" else "f32"
        write_result(os.path.join(out_dir, file_name), case, output, compute_type=declared, storage_type=declared)
        print(f"[{i}/{len(files)}] {case['name']}", flush=True)
    print(f"wrote {len(files)} result files to {out_dir}")


if __name__ == "__main__":
    main(sys.argv)
