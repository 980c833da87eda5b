"""Graded checks for lesson 02: fusing the Q/K/V projections into one matrix, and a self-attention
head that uses one fused projection (as GPT-2's c_attn and nn.MultiheadAttention's in_proj do)."""
import math

import torch
from torch import nn

from ..grading import call_learner, exercise, expect, expect_close, expect_shape, expect_tuple


def _reference_attention(x, weight, bias, d_head, mask=None):
    """q, k, v = the three d_head-wide column blocks of x Wᵀ + b; masked softmax(q kᵀ/√d_head) v."""
    qkv = x.double() @ weight.double().T + bias.double()
    q, k, v = qkv[..., :d_head], qkv[..., d_head:2 * d_head], qkv[..., 2 * d_head:]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1).nan_to_num(0.0)       # a fully masked row: zero weights
    return (weights @ v).float(), weights.float()




def _linear(rng, d_in, d_out, bias=True):
    layer = nn.Linear(d_in, d_out, bias=bias)
    with torch.no_grad():
        layer.weight.copy_(torch.randn(d_out, d_in, generator=rng) / math.sqrt(d_in))
        if bias:
            layer.bias.copy_(torch.randn(d_out, generator=rng))
    return layer


@exercise("02.fuse-qkv", points=2, uses="fuse_qkv")
def check_fuse(fn, rng):
    """One nn.Linear whose output is [q_proj(x), k_proj(x), v_proj(x)], with or without biases."""
    plans = [((5, 3, 3, 4), (True, True, True), "q, k and v of different widths: is the order q, k, v?"),
             ((4, 4, 4, 4), (True, False, True), "k_proj has no bias (bias=None): its part of the fused bias is zero"),
             ((3, 2, 2, 6), (False, False, False), "no projection has a bias")]
    for _ in range(3):
        d_in, d_qk, d_v = (int(n) for n in torch.randint(1, 9, (3,), generator=rng))
        biases = tuple(bool(b) for b in torch.rand(3, generator=rng) > 0.3)
        plans.append(((d_in, d_qk, d_qk, d_v), biases, f"random case: d_in={d_in}, q/k width {d_qk}, v width {d_v}"))
    for (d_in, d_q, d_k, d_v), biases, case in plans:
        parts = [_linear(rng, d_in, d, b) for d, b in zip((d_q, d_k, d_v), biases)]
        fused = call_learner(case, fn, *parts)
        expect(isinstance(fused, nn.Linear), f"[{case}] fuse_qkv should return an nn.Linear, got {type(fused).__name__}")
        expect_shape(case, fused.weight, (d_q + d_k + d_v, d_in), name="the fused weight")
        expect(fused.bias is not None, f"[{case}] the fused layer needs a bias (zeros where a part had none)")
        x = torch.randn(2, 5, d_in, generator=rng)
        with torch.no_grad():
            expected = torch.cat([p(x) for p in parts], dim=-1)
        expect_close(case, call_learner(case, fused, x), expected, atol=1e-5, name="fused(x)")


def _weights(rng, d_model, d_head):
    """GPT-2's layout (Conv1D): weight (d_model, 3 * d_head), bias (3 * d_head,)."""
    return (torch.randn(d_model, 3 * d_head, generator=rng) / math.sqrt(d_model),
            torch.randn(3 * d_head, generator=rng) * 0.3)


def _compare(fn, x, weight, bias, mask, case):
    d_head = weight.shape[1] // 3
    got = call_learner(case, fn, x, weight, bias) if mask is None else call_learner(case, fn, x, weight, bias, mask)
    expect_tuple(case, got, ("output", "weights"))
    expected_out, expected_weights = _reference_attention(x, weight.T, bias, d_head, mask)
    expect_close(case, got[1], expected_weights, atol=1e-5, name="weights")
    expect_close(case, got[0], expected_out, atol=1e-5, name="output")


@exercise("02.fused-forward", points=2, uses="fused_self_attention")
def check_forward(fn, rng):
    """q, k, v are the first, second and third d_head columns of x @ weight + bias; scaled by 1/√d_head."""
    d_model, d_head = 12, 3
    w, b = _weights(rng, d_model, d_head)
    _compare(fn, torch.randn(2, 5, d_model, generator=rng), w, b, None,
             "d_model=12, weight (12, 9) so d_head=3: scale by 1/√d_head (not √d_model); q, k, v in that order")
    for i in range(5):
        B, T = (int(n) for n in torch.randint(1, 6, (2,), generator=rng))
        d_model, d_head = (int(n) for n in torch.randint(1, 13, (2,), generator=rng))
        if i == 0:
            d_model = 3 * d_head          # a square weight: x @ weight.T would run - and be wrong
        w, b = _weights(rng, d_model, d_head)
        case = f"case {i}: x ({B}, {T}, {d_model}), weight {tuple(w.shape)}"
        _compare(fn, torch.randn(B, T, d_model, generator=rng), w, b, None, case)


@exercise("02.fused-masked", points=1, uses="fused_self_attention")
def check_masked(fn, rng):
    """Boolean masks (True = may attend), broadcast over the batch, with a fully masked query row."""
    d_model, d_head, T = 8, 4, 5
    w, b = _weights(rng, d_model, d_head)
    _compare(fn, torch.randn(2, T, d_model, generator=rng), w, b,
             torch.ones(T, T, dtype=torch.bool).tril(), "causal mask (T=5): True means *may attend*")
    for i in range(3):
        B, T = (int(n) for n in torch.randint(1, 6, (2,), generator=rng))
        d_model, d_head = (int(n) for n in torch.randint(2, 10, (2,), generator=rng))
        mask = torch.rand(1, T, T, generator=rng) > 0.4
        mask[..., 0] = True
        if i == 2:
            mask[0, -1] = False
        case = f"case {i}: x ({B}, {T}, {d_model}), mask {tuple(mask.shape)}" + (
            ", the last query has every key masked (zero weights, zero output)" if i == 2 else "")
        w, b = _weights(rng, d_model, d_head)
        _compare(fn, torch.randn(B, T, d_model, generator=rng), w, b, mask, case)
