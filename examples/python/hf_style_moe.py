#!/usr/bin/python3
"""MoE blocks written the way Hugging Face transformers writes GPT-OSS and Qwen3-MoE, judged by
moe-conform: each block on the cases of its expert type (docs/model-mapping.md says why each line
of the mapping below is there).

    PYTHONPATH=build/python /usr/bin/python3 examples/python/hf_style_moe.py data/golden
    PYTHONPATH=build/python /usr/bin/python3 examples/python/hf_style_moe.py data/golden --fixed-constants  # fails

The router is outside the op: each block's expert loop is called with the case's chosen experts
and routing weights. The blocks run in float32 (float64 for f64 cases) and declare that. With
--fixed-constants they keep GPT-OSS's 1.702 / 7.0 and Qwen3's SiLU, as the models do, and fail
every case drawn with other values.
"""
import argparse
import sys

import numpy as np
import torch

import moe_conform


class GptOssExperts(torch.nn.Module):
    """GPT-OSS's experts: gate and up interleaved in one [E, H, 2I] projection (gate on the even
    lanes), used as x @ W with biases; min/clamp at the limit, swish with alpha, (up + 1) * glu."""

    def __init__(self, hidden, inter, experts, dtype):
        super().__init__()
        self.gate_up_proj = torch.nn.Parameter(torch.empty(experts, hidden, 2 * inter, dtype=dtype))
        self.gate_up_proj_bias = torch.nn.Parameter(torch.empty(experts, 2 * inter, dtype=dtype))
        self.down_proj = torch.nn.Parameter(torch.empty(experts, inter, hidden, dtype=dtype))
        self.down_proj_bias = torch.nn.Parameter(torch.empty(experts, hidden, dtype=dtype))
        self.alpha, self.limit = 1.702, 7.0

    def forward(self, x, router_indices, router_scores):  # router_scores: [T, E], zero off the chosen
        out = torch.zeros_like(x)
        for e in range(self.gate_up_proj.shape[0]):
            tokens = (router_indices == e).any(dim=-1).nonzero(as_tuple=True)[0]
            if tokens.numel() == 0:
                continue
            gate_up = x[tokens] @ self.gate_up_proj[e] + self.gate_up_proj_bias[e]
            gate, up = gate_up[..., ::2], gate_up[..., 1::2]
            gate = gate.clamp(max=self.limit)
            up = up.clamp(min=-self.limit, max=self.limit)
            glu = gate * torch.sigmoid(gate * self.alpha)
            y = ((up + 1) * glu) @ self.down_proj[e] + self.down_proj_bias[e]
            out.index_add_(0, tokens, y * router_scores[tokens, e, None])
        return out


class Qwen3Expert(torch.nn.Module):
    """One Qwen3-MoE expert: nn.Linear gate/up/down without bias, act(gate(x)) * up(x)."""

    def __init__(self, hidden, inter, dtype):
        super().__init__()
        self.gate_proj = torch.nn.Linear(hidden, inter, bias=False, dtype=dtype)
        self.up_proj = torch.nn.Linear(hidden, inter, bias=False, dtype=dtype)
        self.down_proj = torch.nn.Linear(inter, hidden, bias=False, dtype=dtype)
        self.act_fn = torch.nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Swish(torch.nn.Module):
    """swish(x; beta) = x sigmoid(beta x); SiLU is beta 1."""

    def __init__(self, beta):
        super().__init__()
        self.beta = beta

    def forward(self, x):
        return x * torch.sigmoid(self.beta * x)


def qwen3_expert_loop(experts, x, selected, routing_weights):
    """The expert half of Qwen3's sparse block, its routing (softmax, top-k, renormalisation) given."""
    out = torch.zeros_like(x)
    mask = torch.nn.functional.one_hot(selected, num_classes=len(experts)).permute(2, 1, 0)
    for e, expert in enumerate(experts):
        slot, tokens = torch.where(mask[e])
        if tokens.numel() > 0:
            out.index_add_(0, tokens, expert(x[tokens]) * routing_weights[tokens, slot, None])
    return out


# ---- the case's inputs onto the blocks (docs/model-mapping.md) ----

TORCH_TYPES = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def math_type(case):
    return torch.float64 if case.data_type == "f64" else torch.float32


def output(case, y):
    """The output in the case's data type (numpy has no bf16: its values as float32)."""
    y = y.to(TORCH_TYPES[case.data_type]).to(math_type(case))
    return y.reshape(np.asarray(case.inputs["hidden_states"]).shape).numpy()


def tensor(case, name):
    return torch.from_numpy(np.asarray(case.inputs[name])).to(math_type(case))


def weight_nk(case, name):
    """A weight as [E, N, K] (y = x W^T), whichever layout the case uses; compressed ones exact."""
    if name + "_scale" in case.inputs:
        return torch.from_numpy(case.dequantized(name)).to(math_type(case))
    w = tensor(case, name)
    return w if case.attrs["weight_layout"] == "NK" else w.transpose(1, 2)


def routing(case):
    """(indices [T, K], weights [T, K], scores [T, E]) from either routing layout."""
    a = case.attrs
    T, K, E = a["T"], a["K"], a["E"]
    idx = torch.from_numpy(np.asarray(case.inputs["router_topk_output_indices"]).astype(np.int64)).reshape(T, K)
    r = tensor(case, "routing_weights")
    if a["routing_layout"] == "compact":
        w = r.reshape(T, K)
        scores = torch.zeros(T, E, dtype=r.dtype).scatter_(1, idx, w)
    else:
        scores = r.reshape(E, T).t().contiguous()
        w = scores.gather(1, idx)
    return idx, w, scores


def gpt_oss_fn(case, fixed_constants=False):
    a = case.attrs
    T, H, I, E = a["T"], a["H"], a["I"], a["E"]
    dt = math_type(case)
    block = GptOssExperts(H, I, E, dt)
    gate_up = weight_nk(case, "weight_0").transpose(1, 2)  # [E, H, 2I], x @ W
    bias0 = tensor(case, "bias_0").reshape(E, 2 * I) if "bias_0" in case.inputs else torch.zeros(E, 2 * I, dtype=dt)
    bias1 = tensor(case, "bias_1").reshape(E, H) if "bias_1" in case.inputs else torch.zeros(E, H, dtype=dt)
    if a["gate_lane"] == 1:  # the block takes the gate from the even lanes: swap each (even, odd) pair
        pairs = torch.arange(2 * I).view(I, 2).flip(1).reshape(-1)
        gate_up, bias0 = gate_up[:, :, pairs], bias0[:, pairs]
    with torch.no_grad():
        block.gate_up_proj.copy_(gate_up)
        block.gate_up_proj_bias.copy_(bias0)
        block.down_proj.copy_(weight_nk(case, "weight_1").transpose(1, 2))  # [E, I, H]
        block.down_proj_bias.copy_(bias1)
        if not fixed_constants:
            block.alpha, block.limit = a["swish_beta"], a["clamp_limit"]
        idx, _, scores = routing(case)
        y = block(tensor(case, "hidden_states").reshape(T, H), idx, scores)
    return output(case, y)


def qwen3_fn(case, fixed_constants=False):
    a = case.attrs
    T, H, I, E = a["T"], a["H"], a["I"], a["E"]
    dt = math_type(case)
    experts = [Qwen3Expert(H, I, dt) for _ in range(E)]
    w0, w1, w2 = (weight_nk(case, n) for n in ("weight_0", "weight_1", "weight_2"))
    beta = a["swish_beta"]
    with torch.no_grad():
        for e, ex in enumerate(experts):
            ex.gate_proj.weight.copy_(w0[e])
            ex.up_proj.weight.copy_(w1[e])
            ex.down_proj.weight.copy_(w2[e])
            if not fixed_constants and beta != 1.0:  # SiLU is swish with beta 1
                ex.act_fn = Swish(beta)
        idx, w, _ = routing(case)
        y = qwen3_expert_loop(experts, tensor(case, "hidden_states").reshape(T, H), idx, w)
    return output(case, y)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suite", help="a folder of golden files (data/golden) or one file")
    ap.add_argument("--fixed-constants", action="store_true",
                    help="keep the models' own constants (1.702 / 7.0, SiLU): cases with other values fail")
    args = ap.parse_args()
    worst = 0
    for name, fn, expert_type in (("gpt-oss", gpt_oss_fn, "GEMM2_BIAS_SWIGLU_CLAMP"),
                                  ("qwen3", qwen3_fn, "GEMM3_SWIGLU")):
        summary = moe_conform.run_suite(lambda case, fn=fn: fn(case, args.fixed_constants), args.suite,
                                        expert_type=expert_type, compute="f32", storage="f32", name=name)
        print(f"{name}: {summary.count_line}")
        worst = max(worst, summary.exit_code)
    return worst


if __name__ == "__main__":
    sys.exit(main())
