"""loop_f32 as a Python function: the operation in float32 numpy arithmetic, with exactly the
operations and summation order of the built-in backend loop_f32 (backends/simulators/src/
loop_backend.cpp) and of examples/plugin/moe_loops.c, so that the three get identical metrics.

numpy's own float32 exp differs from the C library's expf in the last bit on many inputs, so
exp comes from libm through ctypes; every other operation is an element-wise IEEE float32 one.
"""
import ctypes
import ctypes.util

import numpy as np

_libm = ctypes.CDLL(ctypes.util.find_library("m"))
_libm.expf.restype = ctypes.c_float
_libm.expf.argtypes = [ctypes.c_float]
_expf = np.frompyfunc(lambda v: _libm.expf(v), 1, 1)

F = np.float32


def _expf32(x):
    return np.asarray(_expf(x), dtype=F).reshape(x.shape)


def _gemv(w, bias, experts, x, nk):
    """y[p, n] = sum_k W[e_p](n, k) x[p, k] in index order (float32), + bias[e_p][n]."""
    W = w[experts]  # [P, N, K] (NK) or [P, K, N] (KN)
    if not nk:
        W = np.swapaxes(W, 1, 2)
    y = np.zeros(W.shape[:2], dtype=F)
    for k in range(W.shape[2]):
        y = y + W[:, :, k] * x[:, k:k + 1]
    if bias is not None:
        y = y + bias.reshape(bias.shape[0], -1)[experts]
    return y


def _minimum(x, limit):
    return np.where(x > limit, limit, x).astype(F)


def _clamp(x, lo, hi):
    return np.where(x < lo, lo, np.where(x > hi, hi, x)).astype(F)


def _swish(x, beta):
    return x / (F(1) + _expf32(-beta * x))


def _round_bf16(v):
    u = v.astype(F).view(np.uint32).astype(np.uint64)
    nan = np.isnan(v)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    r = np.where(nan, u | 0x400000, r).astype(np.uint32)
    return r.view(F)


def loop_f32(case):
    a = case.attrs
    x_in = case.inputs
    T, H, I, K = a["T"], a["H"], a["I"], a["K"]
    wide = {name: np.asarray(v).astype(F) for name, v in x_in.items() if name != "router_topk_output_indices"}
    idx = np.asarray(x_in["router_topk_output_indices"]).reshape(T, K).astype(np.int64)
    x = wide["hidden_states"].reshape(T, H)
    pairs_t = np.repeat(np.arange(T), K)
    experts = idx.reshape(-1)
    xp = x[pairs_t]
    nk = a["weight_layout"] == "NK"
    beta, limit = F(a["swish_beta"]), F(a["clamp_limit"])
    stages = {}
    if a["expert_type"] == "GEMM2_BIAS_SWIGLU_CLAMP":
        gate_up = _gemv(wide["weight_0"], wide.get("bias_0"), experts, xp, nk)
        g = a["gate_lane"]
        gate, lin = gate_up[:, g::2], gate_up[:, 1 - g::2]
        act = (_clamp(lin, -limit, limit) + F(1)) * _swish(_minimum(gate, limit), beta)
        down = _gemv(wide["weight_1"], wide.get("bias_1"), experts, act, nk)
        stages["gate_up"] = gate_up
    else:
        gate = _gemv(wide["weight_0"], None, experts, xp, nk)
        up = _gemv(wide["weight_1"], None, experts, xp, nk)
        act = _swish(gate, beta) * up
        down = _gemv(wide["weight_2"], None, experts, act, nk)
        stages["gate"], stages["up"] = gate, up
    stages["act"], stages["down"] = act, down
    routing = wide["routing_weights"]
    if a["routing_layout"] == "compact":
        w = routing.reshape(T, K)
    else:
        dense = routing.reshape(routing.shape[0], T)
        w = dense[idx, np.arange(T)[:, None]]
    out = np.zeros((T, H), dtype=F)
    down = down.reshape(T, K, H)
    for k in range(K):
        out = out + w[:, k:k + 1] * down[:, k, :]
    shape = x_in["hidden_states"].shape
    data = case.data_type
    out = out.reshape(shape)
    if data == "f64":
        out = out.astype(np.float64)
    elif data == "f16":
        out = out.astype(np.float16)
    elif data == "bf16":
        out = _round_bf16(out)
    return out, {name: v.reshape(T, K, v.shape[-1]) for name, v in stages.items()}
