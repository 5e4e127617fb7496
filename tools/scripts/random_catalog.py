#!/usr/bin/python3
"""A catalogue of random cases (spec/catalog-format.md), for soaking backends beyond the bundled
suite: random shapes (0-40 tokens, 2-12 experts, top-1 to top-4, widths up to 256, rank-3 inputs),
every data type, both expert types and conventions, attributes in either spelling, gate lanes,
biases, every compressed weight type with per-group, per-channel, per-tensor and mixed scales,
zero points, routers and routing constraints, magnitude regimes from near-subnormal to near
overflow, NaN and Inf inputs, odd scale and FP8 codes, and a share of exact-by-construction cases.
The same SEED gives the same catalogue (random.Random(SEED)); case names are r<SEED>_<i>_<tags>.

--wide makes the same kinds of case at model widths instead (hidden and inter up to 3072, GPT-OSS's
2880 and other model widths among them, groups up to 1024, 0-12 tokens, 2-6 experts; names
w<SEED>_<i>_<tags>): the widths where the optimized kernels take their long loops, chunk tails,
prefetches and summation chains, which widths up to 256 reach barely or not at all.

--decode aims those widths at the decode kernels for compressed weights (names d<SEED>_<i>_<tags>):
every case compressed, mostly 4-bit (u4, i4, MXFP4) in groups of 32 with f16 or E8M0 scales and
zero points of the weight's own type (the layouts the kernels read as stored), 1-8 tokens (every
row count the kernels unroll for), mostly bf16 data, and reduction widths that are odd multiples
of the group (a row's first zero-point nibble then alternates between a byte's low and high
half), below one 128-weight chunk, or model widths. Its f32 and f16 cases (about one in four) draw
every weight type, scale type, zero point and group length evenly instead (the f32 kernels' paths).
About one MXFP4 case in six gives one or two output rows E8M0 scale code 0 (2^-127) in every block
of every expert's down weight, and half the FP8 cases a NaN (E5M2: or infinite) code at one place
of every expert's down weight. A --wide seed of 20 holds about one case of 4-bit weights on bf16
data; a --decode seed of 20 about ten.

In every mode, large activations stay where f16 block scales can still scale the weights down to
match, and a compressed weight keeps its fill's magnitude, so that few results end MISTRUSTED or
SKIP for want of a weight small enough.

    /usr/bin/python3 tools/scripts/random_catalog.py [--wide | --decode] SEED COUNT OUT.json
    build/bin/moe-golden generate --catalog OUT.json --out DIR --tier full --stages --manifest
    build/bin/moe-conform run --backend all --suite DIR      # or --backend-lib your_plugin.so

A correct backend passes every case (MISTRUSTED and SKIP where the tolerance policy says so);
docs/moe-golden.md, "Random cases", says what such soaks have found.
"""
import json
import math
import random
import sys

GEMM2 = "GEMM2_BIAS_SWIGLU_CLAMP"
GEMM3 = "GEMM3_SWIGLU"

# exponent windows (log2) where a data type holds normal values, kept a little inside
DT_EXP = {"f16": (-13, 14), "bf16": (-120, 120), "f32": (-120, 120), "f64": (-120, 120)}


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def pick_shape_dim(rng, mult, lo, hi):
    """a multiple of mult in [lo, hi] (at least mult)"""
    hi = max(hi, mult)
    return mult * rng.randint(1, hi // mult)


def rand_fill(rng, dtype, magnitude_exp, allow_constant=True):
    """a fill whose values have magnitude about 2^magnitude_exp"""
    kinds = ["uniform", "normal", "dyadic", "log_uniform"] + (["constant"] if allow_constant else [])
    kind = rng.choices(kinds, weights=[4, 3, 2, 2, 0.4] if allow_constant else [4, 3, 2, 2])[0]
    lo, hi = DT_EXP[dtype]
    e = max(lo, min(hi, magnitude_exp))
    if kind == "uniform":
        return {"kind": "uniform", "scale": rng.uniform(1, 2) * 2.0 ** e}
    if kind == "normal":
        return {"kind": "normal", "scale": rng.uniform(1, 2) * 2.0 ** (e - 2)}
    if kind == "dyadic":
        rg = rng.randint(1, 16)
        bits = int(math.log2(rg)) - e
        if 0 <= bits <= 60:
            return {"kind": "dyadic", "range": rg, "bits": bits}
        return {"kind": "uniform", "scale": rng.uniform(1, 2) * 2.0 ** e}  # dyadic cannot reach this magnitude
    if kind == "log_uniform":
        width = rng.randint(0, 16)
        mx = max(lo, min(hi, e))
        mn = max(lo - 10 if dtype != "f16" else -24, mx - width)
        return {"kind": "log_uniform", "min_exp": mn, "max_exp": mx}
    v = rng.choice([0.0, 2.0 ** e, -1.5 * 2.0 ** e])
    return {"kind": "constant", "value": v}


# the largest value a quantised weight's levels reach, in units of its scale
QUANT_SPAN = {"u8": 255, "i8": 128, "u4": 15, "i4": 8, "f8e4m3": 448, "f8e5m2": 57344}
# the smallest f16 block scale the generator draws (f16 subnormals; below 2^-24 they are 0)
F16_SCALE_FLOOR_EXP = -20


def block_scale_dtype(c):
    """a compressed case's scale type, as moe-golden takes it when the catalogue names none
    (spec/catalog-format.md: f16 for the integer types, f32 for FP8, E8M0 for MXFP4)"""
    wd = c["weight_dtype"]
    return c.get("scale_dtype", "f8e8m0" if wd == "f4e2m1" else "f32" if wd.startswith("f8") else "f16")


def fill_magnitude(f):
    """about the largest |value| a fill gives (0 where it gives none)"""
    if f["kind"] in ("uniform", "normal"):
        return f["scale"]
    if f["kind"] == "dyadic":
        return f["range"] * 2.0 ** -f["bits"]
    if f["kind"] == "log_uniform":
        return 2.0 ** f["max_exp"]
    return abs(f.get("value", 0.0))


def large_x_limit(c, H):
    """large_x: the largest activation exponent ex whose compensating weights (about
    2^-ex / sqrt(H), and 2^(-ex-2) for GEMM3's weight_1) a compressed weight can still carry. f16
    block scales stop at 2^F16_SCALE_FLOOR_EXP, so such a weight's values stop at about span times
    that; past it the products grow with the activations, the act stage leaves f32's range and
    every backend's result is SKIP or MISTRUSTED (docs/measured.md, "Random decode cases")."""
    limit = DT_EXP[c["dtype"]][1] - 2
    wd = c.get("weight_dtype")
    if wd in QUANT_SPAN and block_scale_dtype(c) == "f16":
        floor = math.log2(QUANT_SPAN[wd]) + F16_SCALE_FLOOR_EXP
        limit = min(limit, math.floor(-floor) - max(int(math.log2(max(H, 1))) // 2, 2))
    return max(4, limit)


# --wide: widths real models use (GPT-OSS's 2880, not a multiple of 128; Qwen3-30B-A3B's 2048 and
# 768) and widths whose chunks come in odd counts (2112 = 33 x 64, 1152 = 9 x 128)
MODEL_WIDTHS = [2880, 2112, 2048, 1536, 1152, 768, 3072]


def wide_dim(rng, mult):
    """a model width when one is a multiple of mult, else a random multiple of mult up to 3072"""
    fits = [w for w in MODEL_WIDTHS if w % mult == 0]
    if fits and rng.random() < 0.5:
        return rng.choice(fits)
    return pick_shape_dim(rng, mult, 1, rng.choice([512, 1024, 3072]))


def decode_dim(rng, mult):
    """--decode: a reduction width the decode kernels treat differently: a model width, an odd
    multiple of mult (an odd number of groups a row), less than one 128-weight chunk, or any
    multiple of mult up to 3072 (the model widths hold an even number of groups of 32)"""
    r = rng.random()
    fits = [w for w in MODEL_WIDTHS if w % mult == 0]
    if r < 0.25 and fits:
        return rng.choice(fits)
    if r < 0.65:
        return mult * (2 * rng.randint(0, max(0, 3072 // mult - 1) // 2) + 1)
    if r < 0.75:
        return pick_shape_dim(rng, mult, 1, 128)
    return pick_shape_dim(rng, mult, 1, 3072)


def gen_case(rng, seed, i, wide=False, decode=False, even=False):
    """one random case; wide: at model widths; decode (implies wide): aimed at the decode kernels;
    even (with decode): f32 or f16 data, every weight type, scale type, zero point and group
    length drawn evenly (the f32 kernels' paths; decode_case)"""
    wide = wide or decode
    tags = []
    c = {}
    et = rng.choice([GEMM2, GEMM3])
    c["expert_type"] = et
    # --decode: two cases in five the layout the bf16 and int8 dot kernels read as stored, with
    # the most code behind it (u4 or i4 on bf16 data in groups of 32, f16 scales, zero-point nibbles)
    stored_zp = decode and not even and rng.random() < 0.4
    if even:
        dtype = rng.choice(["f32", "f16"])
    elif decode:
        dtype = "bf16" if stored_zp else rng.choices(["bf16", "f32", "f16", "f64"], weights=[6, 2, 2, 0.5])[0]
    else:
        dtype = rng.choice(["f32", "f16", "bf16", "f64"])
    c["dtype"] = dtype
    c["index_dtype"] = rng.choice(["i32", "i64"])
    c["seed"] = rng.getrandbits(63)

    # ---- exact-by-construction cases (a small share, bundled recipes on random shapes)
    if rng.random() < 0.08 and dtype != "f64" and not wide:
        return gen_exact(rng, c, seed, i, et, dtype)

    compressed = decode or rng.random() < 0.5
    conv = rng.choice(["spec", "openvino"])
    if compressed and et == GEMM2:
        conv = "openvino"  # the spec convention's GEMM2 is KN; compressed weights are NK only
    c["convention"] = conv
    tags.append("g2" if et == GEMM2 else "g3")
    tags.append(conv[:2])
    tags.append(dtype)

    # ---- compressed weights
    wnames = ["weight_0", "weight_1"] if et == GEMM2 else ["weight_0", "weight_1", "weight_2"]
    down = "weight_1" if et == GEMM2 else "weight_2"
    hmult = imult = 1
    gs_obj = None
    if compressed:
        if stored_zp:
            wd = rng.choice(["u4", "u4", "i4"])
        elif even:
            wd = rng.choice(["u4", "i4", "f4e2m1", "u8", "i8", "f8e4m3", "f8e5m2"])
        elif decode:
            wd = rng.choices(["u4", "i4", "f4e2m1", "u8", "i8", "f8e4m3", "f8e5m2"],
                             weights=[4, 2, 4, 0.5, 0.5, 0.5, 0.5])[0]
        else:
            wd = rng.choice(["u8", "i8", "u4", "i4", "f4e2m1", "f8e4m3", "f8e5m2"])
        c["weight_dtype"] = wd
        tags.append(wd)
        cw = list(wnames)
        # (even: a weight left in f16 with one or two rows an expert takes the small-M kernels)
        if rng.random() < (0.3 if even else 0.1 if decode else 0.25):
            cw = sorted(rng.sample(wnames, rng.randint(1, len(wnames))))
            c["compressed_weights"] = cw
        if wd == "f4e2m1":
            hmult = imult = 32
            c["scale_dtype"] = "f8e8m0"
            gs = rng.choice([32, 0, None] if not decode else [32, None])
            if gs is not None:
                c["group_size"] = gs
        else:
            if wd in ("f8e4m3", "f8e5m2"):
                c["scale_dtype"] = rng.choice(["f32", "f16", "bf16", None]) or "f32"
                if rng.random() < 0.3:
                    c["fp8_values"] = rng.choice(["wide", "bottom"])
            elif stored_zp:
                c["scale_dtype"] = "f16"
                c["zero_point"] = "weight_type"
            elif even:
                c["scale_dtype"] = rng.choice(["f16", "f32", "bf16"])
                c["zero_point"] = rng.choice(["weight_type", "none", "f16"])
            elif decode:
                c["scale_dtype"] = rng.choices(["f16", "f32", "bf16"], weights=[6, 1, 1])[0]
                c["zero_point"] = rng.choices(["weight_type", "none", "f16"], weights=[4, 2, 2])[0]
            else:
                sd = rng.choice(["f32", "f16", "bf16", None])
                if sd:
                    c["scale_dtype"] = sd
                zp = rng.choice(["none", "weight_type", "f16", None])
                if zp:
                    c["zero_point"] = zp
            if stored_zp:
                gmode = "group"
            elif decode:
                gmode = rng.choices(["group", "channel", "tensor", "mixed"], weights=[8, 1, 0.5, 0.5])[0]
            else:
                gmode = rng.choice(["group", "channel", "tensor", "mixed"])
            four = wd in ("u4", "i4")
            if gmode == "group" and even:
                gs = rng.choice([16, 32, 64, 128, 256, 512, 1024])
                hmult = imult = gs
                c["group_size"] = gs
            elif gmode == "group" and decode:
                gs = 32 if stored_zp else rng.choices([32, 64, 128, 256, 512, 1024, 16],
                                                      weights=[4, 2, 2, 0.5, 0.5, 0.25, 0.5])[0]
                hmult = imult = gs
                c["group_size"] = gs
            elif gmode == "group":
                gs = rng.choice([2, 4, 8, 16, 32, 64, 128] + ([256, 512, 1024] if wide else []))
                hmult = imult = max(gs, 2 if four else 1)
                c["group_size"] = gs
            elif gmode == "channel":
                hmult = imult = 2 if four else 1
                c["group_size"] = 0
            elif gmode == "tensor":
                hmult = imult = 2 if four else 1
                c["group_size"] = 0
                c["scale_layout"] = "E1G"
            else:
                gs_obj = {}
                gh = rng.choice([0, 2, 4, 8, 16])
                gi = rng.choice([0, 2, 4, 8, 16])
                hmult = max(gh, 2 if four else 1)
                imult = max(gi, 2 if four else 1)
                for w in cw:
                    gs_obj[w] = gi if w == down else gh
                c["group_size"] = gs_obj
            if "scale_layout" not in c and rng.random() < 0.6:
                c["scale_layout"] = rng.choice(["ENG", "ENG1", "E1G"])
            tags.append(str(gmode))
        if wd == "f4e2m1" and rng.random() < 0.3:
            c["scale_layout"] = rng.choice(["ENG", "ENG1", "E1G"])

    # ---- shape
    if decode:
        # every row count of A the decode kernels unroll for (1-8 rows an expert), rarely more
        E = rng.randint(2, 6)
        K = rng.randint(1, min(E, 4))
        T = rng.choice([1, 1, 1, 1, 2, 2, 3, 4, 5, 6, 7, 8, 8, 9])
        H = decode_dim(rng, hmult)
        I = decode_dim(rng, imult)
    elif wide:
        # decode (up to 8 tokens: the in-place kernels) and a little prefill, on few experts: the
        # f64 reference's time grows with T x K x H x I
        E = rng.randint(2, 6)
        K = rng.randint(1, min(E, 4))
        T = rng.choice([0, 1, 1, 2, 3, 5, 8, 8, 9, 12])
        H = wide_dim(rng, hmult)
        I = wide_dim(rng, imult)
    else:
        E = rng.randint(2, 12)
        K = rng.randint(1, min(E, 4))
        T = rng.choice([0] + [rng.randint(1, 40)] * 12)
        hmax = 256
        imax = 256 if compressed else 160
        H = pick_shape_dim(rng, hmult, 1, rng.choice([16, 64, hmax]))
        I = pick_shape_dim(rng, imult, 1, rng.choice([16, 64, imax]))
    shape = {}
    if rng.random() < 0.25 and T > 0:
        # rank 3
        ds = [d for d in divisors(T)]
        b = rng.choice(ds)
        shape["batch"] = b
        shape["seq"] = T // b
        if conv == "openvino" and rng.random() < 0.5:
            shape["indices"] = "BSK"
        elif rng.random() < 0.3:
            shape["indices"] = "TK"
    else:
        shape["tokens"] = T
    shape.update({"hidden": H, "inter": I, "experts": E, "topk": K})
    c["shape"] = shape

    # ---- op parameters
    beta = rng.choice([1.0, 1.702, 1.625, round(rng.uniform(0.0, 3.0), 4), 0.0, -round(rng.uniform(0.1, 2), 3)])
    if et == GEMM2:
        lim = rng.choice([7.0, 0.0, round(rng.uniform(0.1, 20.0), 3), "inf", 1.5])
    else:
        lim = 0.0
    if rng.random() < 0.2:
        # attributes in the convention's own spelling
        if conv == "openvino":
            a = {"expert_beta": beta}
            if et == GEMM2:
                a["expert_alpha"] = lim
            a["gate_idx"] = rng.choice([0, 1])
        else:
            a = {"expert_alpha": beta}
            if et == GEMM2:
                a["expert_beta"] = lim
        c["attributes"] = a
    else:
        p = {"swish_beta": beta}
        if et == GEMM2:
            p["clamp_limit"] = lim
            if conv == "openvino":
                p["gate_lane"] = rng.choice([0, 1])
            elif rng.random() < 0.3:
                p["gate_lane"] = 1
        c["params"] = p

    if et == GEMM2:
        if rng.random() < 0.2:
            c["biases"] = False
        if rng.random() < 0.3:
            c["bias_layout"] = rng.choice(["E1N", "EN"])
        if rng.random() < 0.15:
            c["kink_guard"] = False

    # ---- fills: magnitude regime
    regime = rng.choices(["default", "scaled", "large_x", "tiny", "wide"], weights=[3, 4, 2, 1.5, 1.5])[0]
    tags.append(regime)
    fill = {}
    lo, hi = DT_EXP[dtype]
    if regime == "scaled":
        for name in ["hidden_states"] + wnames + (["bias_0", "bias_1"] if et == GEMM2 else []):
            if rng.random() < 0.6:
                base = 0 if name == "hidden_states" else (-3 if name.startswith("weight") else -1)
                fill[name] = rand_fill(rng, dtype, base + rng.randint(-3, 3))
    elif regime == "large_x":
        # large activations, weights scaled down to compensate (products of order 1..2^8)
        # (the other modes draw over the whole range and clamp: their random stream, and so their
        # audited catalogues, stay as before the limit but for a case's fills; a dyadic fill at the
        # clamped exponent can take a draw more or fewer, and the seed's later cases move with it)
        ex = rng.randint(4, large_x_limit(c, H)) if decode else min(rng.randint(4, hi - 2), large_x_limit(c, H))
        fill["hidden_states"] = rand_fill(rng, dtype, ex, allow_constant=False)
        fill["weight_0"] = rand_fill(rng, dtype, -ex - int(math.log2(max(H, 1)) // 2) + rng.randint(0, 3), allow_constant=False)
        if et == GEMM3:
            fill["weight_1"] = rand_fill(rng, dtype, -ex + rng.randint(-2, 2), allow_constant=False)
    elif regime == "tiny":
        # everything small: outputs near or inside the subnormal range
        ex = rng.randint(lo // 3, -2)
        for name in ["hidden_states"] + wnames:
            fill[name] = rand_fill(rng, dtype, ex + rng.randint(-2, 2), allow_constant=False)
        if et == GEMM2:
            fill["bias_0"] = rand_fill(rng, dtype, 3 * ex, allow_constant=False)
            fill["bias_1"] = rand_fill(rng, dtype, 3 * ex, allow_constant=False)
    elif regime == "wide":
        # log-uniform over many binades
        for name in ["hidden_states"] + wnames:
            if rng.random() < 0.7:
                mx = rng.randint(-4, 4)
                width = rng.randint(4, 24 if dtype != "f16" else 12)
                mn = mx - width
                if dtype == "f16":
                    mn = max(mn, -24)
                fill[name] = {"kind": "log_uniform", "min_exp": mn, "max_exp": mx}
    if compressed:
        # a compressed weight's fill only sets the scale (m); log_uniform and dyadic have no "scale":
        for w in list(fill):
            if w in c.get("compressed_weights", wnames) and fill[w]["kind"] not in ("uniform", "normal"):
                # the fill's magnitude stays (large_x's weights compensate its activations); the
                # other modes still make the draw they made before they kept it, for their stream
                drawn = None if decode else 2.0 ** rng.randint(-8, 2)
                fill[w] = {"kind": "uniform", "scale": fill_magnitude(fill[w]) or drawn or 2.0 ** rng.randint(-8, 2)}
    if compressed and c["weight_dtype"] != "f4e2m1":
        # keep each compressed weight's scale m / span inside its scale type (f16 scales underflow to 0 below
        # about 2^-24 and then every output is 0: a vacuous case); allow f16 subnormal scales down to 2^-20
        span = QUANT_SPAN[c["weight_dtype"]]
        if c.get("fp8_values") == "bottom":
            span = {"f8e4m3": 2.0 ** -4, "f8e5m2": 2.0 ** -12}.get(c["weight_dtype"], span)
        if block_scale_dtype(c) == "f16":
            for w in c.get("compressed_weights", wnames):
                f = fill.get(w)
                if f and f["kind"] in ("uniform", "normal"):
                    f["scale"] = min(max(f["scale"], span * 2.0 ** F16_SCALE_FLOOR_EXP), span * 30000.0)
    if fill:
        c["fill"] = fill

    # ---- routing
    routing = {}
    rmode = rng.choices(["plain", "constrained", "router", "balanced", "shared", "capacity"],
                        weights=[4, 2, 3, 1, 1.5, 1.5])[0]
    tags.append(rmode)
    if rmode in ("plain", "constrained", "capacity"):
        if rng.random() < 0.7:
            routing["weights"] = rng.choice(["softmax", "random", "dyadic", "wide"])
        if rng.random() < 0.3:
            routing["skew"] = rng.choice([0.5, 1.2, 4.0])
    if rmode == "constrained":
        ids = list(range(E))
        rng.shuffle(ids)
        na = rng.randint(0, min(K, E))
        always = ids[:na]
        rest = ids[na:]
        # free experts (not always, not excluded) plus always must be >= K
        max_ex = len(rest) - (K - na)
        nex = rng.randint(0, max(0, max_ex))
        exclude = rest[:nex]
        if always:
            routing["always"] = sorted(always)
        if exclude:
            routing["exclude"] = sorted(exclude)
    if rmode == "capacity":
        routing["capacity_factor"] = rng.choice([0.5, 1.0, 1.25, 2.0])
    if rmode == "balanced":
        # E must divide T*K: adjust T (tokens form only)
        tmax = 12 if wide else 40
        if "tokens" in shape:
            q = E // math.gcd(E, K)
            shape["tokens"] = q * rng.randint(0, max(1, tmax // q))
        else:
            # rank 3: batch*seq*K must be multiple of E
            q = E // math.gcd(E, K)
            shape.pop("batch"); shape.pop("seq")
            shape.pop("indices", None)
            shape["tokens"] = q * rng.randint(1, max(1, tmax // q))
        routing["balanced"] = True
        if rng.random() < 0.5:
            routing["weights"] = rng.choice(["softmax", "random", "dyadic", "wide"])
    use_router = rmode == "router" or (rmode in ("shared", "capacity") and rng.random() < 0.5)
    if rmode == "shared":
        routing["shared_expert"] = rng.randrange(E)
        if not use_router and rng.random() < 0.5:
            routing["weights"] = rng.choice(["softmax", "random", "dyadic", "wide"])
    if use_router:
        Er = E - (1 if "shared_expert" in routing else 0)
        Kr = K - (1 if "shared_expert" in routing else 0)
        routing.pop("skew", None)
        routing.pop("weights", None)
        rt = rng.choice(["softmax_topk", "topk_softmax", "sigmoid_bias", "group_limited"])
        routing["router"] = rt
        if rng.random() < 0.6:
            routing["logit_scale"] = rng.choice([0.5, 1.0, 2.0, 4.0])
        if rt in ("topk_softmax", "sigmoid_bias", "group_limited") and rng.random() < 0.6:
            routing["bias_scale"] = rng.choice([0.0, 0.1, 0.5])
        if rt in ("softmax_topk", "sigmoid_bias", "group_limited") and rng.random() < 0.4:
            routing["normalize"] = rng.choice([True, False])
        if rt == "group_limited":
            opts = []
            for ng in divisors(Er):
                gsz = Er // ng
                for tg in range(1, ng + 1):
                    if tg * gsz >= Kr:
                        opts.append((ng, tg))
            ng, tg = rng.choice(opts)
            routing["n_group"] = ng
            routing["topk_group"] = tg
    if routing:
        c["routing"] = routing

    # ---- occasional overrides (non-finite propagation, negative routing weights)
    Tn = shape.get("tokens", shape.get("batch", 0) * shape.get("seq", 0))
    if Tn > 0 and rng.random() < (0.05 if decode else 0.12):
        ov = []
        kind = rng.choice(["nan_x", "neg_w"])
        if kind == "nan_x" and dtype != "f64":
            if "tokens" in shape:
                idx = [rng.randrange(Tn), rng.randrange(H)]
            else:
                idx = [rng.randrange(shape["batch"]), rng.randrange(shape["seq"]), rng.randrange(H)]
            ov.append({"input": "hidden_states", "index": idx, "value": rng.choice(["nan", "inf", "-inf"])})
            c["kink_guard"] = False
            tags.append("nonfinite")
        elif conv == "openvino":
            t = rng.randrange(Tn)
            k = rng.randrange(K)
            if shape.get("indices") == "BSK":
                idx = [t // shape["seq"], t % shape["seq"], k]
            else:
                idx = [t, k]
            ov.append({"input": "routing_weights", "index": idx, "value": -rng.choice([0.25, 0.5, 1.0, 2.0])})
            tags.append("negw")
        if ov:
            c["overrides"] = ov

    # ---- compressed-weight overrides: FP8 NaN/Inf codes, odd scale values
    # (--decode: fewer, as its cases are all compressed and a non-finite output judges little else)
    if compressed and rng.random() < (0.08 if decode else 0.2):
        wd = c["weight_dtype"]
        cw = c.get("compressed_weights", wnames)
        w = rng.choice(cw)
        Nw = {"weight_0": (2 * I if et == GEMM2 else I), "weight_1": (H if et == GEMM2 else I), "weight_2": H}[w]
        Kw = I if w == down else H
        e = rng.randrange(E)
        ov = c.setdefault("overrides", [])
        if wd in ("f8e4m3", "f8e5m2") and rng.random() < 0.5:
            vals = ["nan", "-nan"] + (["inf", "-inf"] if wd == "f8e5m2" else [])
            ov.append({"input": w, "index": [e, rng.randrange(Nw), rng.randrange(Kw)], "value": rng.choice(vals)})
            tags.append("codeov")
        elif wd != "f4e2m1":
            gsz = c.get("group_size", 0)
            if isinstance(gsz, dict):
                gsz = gsz[w]
            G = 1 if gsz == 0 else Kw // gsz
            layout = c.get("scale_layout", "ENG")
            nrow = 1 if layout == "E1G" else Nw
            idx = [e, rng.randrange(nrow), rng.randrange(G)] + ([0] if layout == "ENG1" else [])
            ov.append({"input": w + "_scale", "index": idx, "value": rng.choice([0.0, -0.0625, 0.001, "inf", "nan"])})
            tags.append("scaleov")
        c["kink_guard"] = False
    if decode:
        e8m0_code0_rows(c, seed, i, et, down, wnames, H, I, E, tags)
        fp8_nonfinite_down_column(c, seed, i, down, wnames, H, I, E, tags)
    c["name"] = "%s%d_%02d_%s" % ("d" if decode else "w" if wide else "r", seed, i, "_".join(tags))
    return c


def decode_case(rng, seed, i):
    """--decode: a case from the seed's stream; where that case has f32 or f16 data, another in
    its place from a generator of its own, drawn evenly (gen_case's even). The stream's draws
    favour 4-bit weights in groups of 32 on bf16 data (the dot kernels' paths); of its f32 and f16
    cases (542 over seeds 1-120 of 20) each of u8, i8, E4M3 and E5M2 held one in 21 to 34, and
    groups of 512 or more one in 23: paths of the f32 kernels of their own. The stream, and so
    every bf16 case of the audited seeds, stays as it was."""
    c = gen_case(rng, seed, i, decode=True)
    if c["dtype"] in ("f32", "f16"):
        c = gen_case(random.Random("decode f32 kernels %d %d" % (seed, i)), seed, i, decode=True, even=True)
    return c


def e8m0_code0_rows(c, seed, i, et, down, wnames, H, I, E, tags):
    """--decode: in some MXFP4 cases, one or two output rows whose every block scale in every
    expert's down weight is E8M0 code 0 (2^-127, the one code no f32 exponent field holds). A
    single block of code 0 changes its row by less than the bound, and another expert's row or a
    bias would hide the row's tiny value, so only cases without biases take it and every
    expert's row is set: such an output lies near 2^-120 on bf16 or f32 data, and a decoder that
    reads code 0 as +0 gives exactly 0 there. Drawn from a generator of its own, so that the seed's stream, and
    so every other case of the audited seeds, stays as it was."""
    if c.get("weight_dtype") != "f4e2m1" or c["dtype"] not in ("bf16", "f32"):
        return
    if down not in c.get("compressed_weights", wnames) or c.get("scale_layout") == "E1G":
        return
    if et == GEMM2 and c.get("biases", True):
        return
    side = random.Random("e8m0 code 0 rows %d %d" % (seed, i))
    if side.random() >= 0.5:
        return
    blocks = I // 32  # the down weight's reduction is I; MXFP4 blocks are 32 wide
    tail = [0] if c.get("scale_layout") == "ENG1" else []
    ov = c.setdefault("overrides", [])
    for n in sorted(side.sample(range(H), min(H, side.randint(1, 2)))):
        for e in range(E):
            for g in range(blocks):
                ov.append({"input": down + "_scale", "index": [e, n, g] + tail, "value": 2.0 ** -127})
    tags.append("e8m0zero")


def fp8_nonfinite_down_column(c, seed, i, down, wnames, H, I, E, tags):
    """--decode: in half the FP8 cases, one NaN (or, E5M2, infinite) code at the same place of
    every expert's down weight. Down row n feeds output n alone, so the code makes output n of
    every token NaN or infinite and leaves the case's other outputs to judge; in the first
    weights it would spread to every output of the tokens routed there, which is why the stream's
    own code overrides stay rare. Decoders that take a row's codes by a fast path and check the
    row for NaN codes apart (E4M3 has no infinity, and its NaN is a code like any other to a
    table) need such a code to be exercised. Every expert, so that whichever is routed holds it;
    drawn from a generator of its own, so that the seed's stream stays as it was."""
    if c.get("weight_dtype") not in ("f8e4m3", "f8e5m2") or down not in c.get("compressed_weights", wnames):
        return
    side = random.Random("fp8 non-finite down column %d %d" % (seed, i))
    if side.random() >= 0.5:
        return
    values = ["nan", "-nan"] + (["inf", "-inf"] if c["weight_dtype"] == "f8e5m2" else [])
    value = side.choice(values)
    n, k = side.randrange(H), side.randrange(I)
    ov = c.setdefault("overrides", [])
    for e in range(E):
        ov.append({"input": down, "index": [e, n, k], "value": value})
    tags.append("fp8" + value.replace("-", "neg"))


def gen_exact(rng, c, seed, i, et, dtype):
    """an exact-by-construction case after the bundled recipes (exact_gemm2/3, exact_compressed);
    top-1 or top-2: three dyadic routing weights can need more than f32's 24 significand bits,
    and the generator refuses such a case as not exact"""
    conv = rng.choice(["spec", "openvino"])
    E = rng.randint(2, 8)
    K = rng.randint(1, 2)
    T = rng.randint(1, 16)
    compressed = rng.random() < 0.4
    if compressed:
        conv = "openvino"
    c["convention"] = conv
    tags = ["exact", "g2" if et == GEMM2 else "g3", conv[:2], dtype]
    if compressed:
        wd = rng.choice(["i4", "i8", "u4", "u8", "f8e4m3", "f8e5m2", "f4e2m1"])
        c["weight_dtype"] = wd
        tags.append(wd)
        if wd == "f4e2m1":
            H = I = 32
        else:
            H = I = 16
            c["group_size"] = rng.choice([4, 0])
            if wd in ("u4", "u8", "i4", "i8") and rng.random() < 0.5:
                c["zero_point"] = "weight_type"
        fill = {"hidden_states": {"kind": "dyadic", "range": 2, "bits": 1}}
        if et == GEMM2:
            fill["bias_0"] = {"kind": "dyadic", "range": 2, "bits": 2}
            fill["bias_1"] = {"kind": "dyadic", "range": 2, "bits": 2}
    else:
        H = rng.choice([8, 16, 32])
        I = rng.choice([4, 8, 16])
        fill = {"hidden_states": {"kind": "dyadic", "range": 4, "bits": 2},
                "weight_0": {"kind": "dyadic", "range": 4, "bits": 3},
                "weight_1": {"kind": "dyadic", "range": 4, "bits": 3}}
        if et == GEMM2:
            fill["bias_0"] = {"kind": "dyadic", "range": 4, "bits": 2}
            fill["bias_1"] = {"kind": "dyadic", "range": 2, "bits": 2}
        else:
            fill["weight_2"] = {"kind": "dyadic", "range": 2, "bits": 3}
    c["shape"] = {"tokens": T, "hidden": H, "inter": I, "experts": E, "topk": K}
    c["fill"] = fill
    c["routing"] = {"weights": "dyadic"}
    c["exact"] = True
    if et == GEMM2:
        c["params"] = {"swish_beta": 0.0, "clamp_limit": 1.5}
    else:
        c["params"] = {"swish_beta": 0.0}
    c["name"] = "r%d_%02d_%s" % (seed, i, "_".join(tags))
    return c


def main():
    args = sys.argv[1:]
    mode = args[0] if args[:1] in (["--wide"], ["--decode"]) else ""
    if mode:
        args = args[1:]
    if len(args) != 3 or not args[0].isdigit() or not args[1].isdigit():
        sys.exit(__doc__ + "\nusage: random_catalog.py [--wide | --decode] SEED COUNT OUT.json"
                 " (SEED and COUNT non-negative integers)")
    seed, count, out = int(args[0]), int(args[1]), args[2]
    rng = random.Random(seed)
    if mode == "--decode":
        cases = [decode_case(rng, seed, i) for i in range(count)]
    else:
        cases = [gen_case(rng, seed, i, wide=mode != "") for i in range(count)]
    kind = {"--wide": "model-width ", "--decode": "decode-kernel "}.get(mode, "")
    cat = {"format": "moe-catalog", "format_version": 1,
           "description": "random %scases (tools/scripts/random_catalog.py%s), seed %d"
                          % (kind, " " + mode if mode else "", seed),
           "defaults": {"tier": "quick"}, "cases": cases}
    with open(out, "w") as f:
        json.dump(cat, f, indent=1)


if __name__ == "__main__":
    main()
