#!/usr/bin/python3
"""A PyTorch MoE layer judged by moe-conform: both expert types (GPT-OSS's GEMM2_BIAS_SWIGLU_CLAMP,
Qwen3's GEMM3_SWIGLU), both conventions, every data type of the bundled suite.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/torch_moe.py data/golden
    PYTHONPATH=build/python /usr/bin/python3 examples/python/torch_moe.py data/golden --bug   # caught

It reads the resolved attributes (case.attrs: swish_beta, clamp_limit, gate_lane, weight_layout,
routing_layout), so the two conventions need no code of their own. Compressed weights (u4, u8,
MXFP4, FP8: spec/compressed.md) come as their stored codes with scale and zero-point arrays;
case.dequantized(name) gives their values (experts=[...]: those experts alone, e.g. the routed ones),
which this example multiplies in float32. Matmuls run in float32 (float64 for f64 cases); intermediates
are rounded to the case's data type between stages, as a kernel that keeps them in bf16/f16 does,
and that is what it declares: compute f32, storage "data".

On a GPU, the same wrapper calls your CUDA or Triton kernel instead of moe_layer():
    def fn(case):
        x = torch.from_numpy(case.inputs["hidden_states"]).cuda()
        ...                                        # the other inputs likewise
        y = my_fused_moe(x, ...)                   # your kernel
        return y.float().cpu().numpy()             # numpy has no bf16: hand back float32 values
"""
import argparse
import sys

import numpy as np
import torch

import moe_conform

TORCH_TYPES = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def moe_layer(case, bug=False):
    """Returns (output, stages) for one case."""
    a, inp = case.attrs, case.inputs
    T, H, I, K, E = a["T"], a["H"], a["I"], a["K"], a["E"]
    data = TORCH_TYPES[case.data_type]
    math = torch.float64 if data == torch.float64 else torch.float32

    def t(name):
        return torch.from_numpy(np.asarray(inp[name])).to(math)

    def store(v):  # intermediates kept in the data type
        return v.to(data).to(math)

    def weights(name):  # [E, N, K] whichever layout the case uses
        if name + "_scale" in inp:  # compressed: inp holds the codes, scale and zero point as stored
            return torch.from_numpy(case.dequantized(name)).to(math)  # (W - Z) * S, exact in float64
        w = t(name)
        return w if a["weight_layout"] == "NK" else w.transpose(1, 2)

    x = t("hidden_states").reshape(T, H)
    idx = torch.from_numpy(np.asarray(inp["router_topk_output_indices"]).astype(np.int64)).reshape(T, K)
    routing = t("routing_weights")
    if a["routing_layout"] == "compact":
        w = routing.reshape(T, K)
    else:
        w = routing.reshape(E, T).gather(0, idx.t()).t()
    beta, limit = a["swish_beta"], a["clamp_limit"]
    gemm2 = case.expert_type == "GEMM2_BIAS_SWIGLU_CLAMP"

    xp = x.repeat_interleave(K, dim=0)  # one row per (token, slot)
    e = idx.reshape(-1)
    stages = {}
    if gemm2:
        w0, w1 = weights("weight_0"), weights("weight_1")
        b0 = t("bias_0").reshape(E, -1) if "bias_0" in inp else torch.zeros(E, 2 * I, dtype=math)
        b1 = t("bias_1").reshape(E, -1) if "bias_1" in inp else torch.zeros(E, H, dtype=math)
        gate_up = store(torch.einsum("pk,pnk->pn", xp, w0[e]) + b0[e])
        g = a["gate_lane"]
        gate, lin = gate_up[:, g::2], gate_up[:, 1 - g::2]
        # NaN-propagating min and clamp (torch.clamp keeps NaN, as the op does).
        lin_term = torch.clamp(lin, -limit, limit) + (0.0 if bug else 1.0)
        capped = torch.where(gate > limit, torch.full_like(gate, limit), gate)
        act = store(lin_term * capped * torch.sigmoid(beta * capped))
        down = store(torch.einsum("pi,phi->ph", act, w1[e]) + b1[e])
        stages["gate_up"] = gate_up
    else:
        w0, w1, w2 = weights("weight_0"), weights("weight_1"), weights("weight_2")
        gate = store(torch.einsum("pk,pnk->pn", xp, w0[e]))
        up = store(torch.einsum("pk,pnk->pn", xp, w1[e]))
        act = store(gate * torch.sigmoid(beta * gate) * up)
        down = store(torch.einsum("pi,phi->ph", act, w2[e]))
        stages["gate"], stages["up"] = gate, up
    stages["act"], stages["down"] = act, down
    out = (w.reshape(T, K, 1) * down.reshape(T, K, H)).sum(dim=1).to(data)
    shape = np.asarray(inp["hidden_states"]).shape
    out = out.reshape(shape).to(torch.float64 if data == torch.float64 else torch.float32).numpy()
    return out, {name: v.reshape(T, K, v.shape[-1]).float().numpy() for name, v in stages.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", help="folder of golden files, e.g. data/golden")
    parser.add_argument("--bug", action="store_true", help="plant a bug (the +1 of the clamped linear lane dropped)")
    parser.add_argument("--json", help="also write the JSON report here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    summary = moe_conform.run_suite(lambda case: moe_layer(case, args.bug), args.suite, compute="f32",
                                    storage="data", json=args.json, name="torch_moe" + ("_bug" if args.bug else ""))
    return summary.exit_code


if __name__ == "__main__":
    sys.exit(main())
