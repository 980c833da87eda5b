"""Graded checks for lesson 03: grouped-query attention (several query heads share one key/value head)."""
import math

import torch
from torch import nn

from ..grading import call_learner, exercise, expect, expect_close, expect_shape, expect_tuple, expect_value_error, randint
from ..shortcuts import ATTENTION

FORBIDS = ATTENTION + ("course_lib.attention:MultiHeadAttention",)




def _repeat_kv(x, n_rep):
    return x[:, :, None].expand(-1, -1, n_rep, -1, -1).flatten(1, 2)


@exercise("03.repeat-kv", points=1, uses="repeat_kv", forbids=FORBIDS)
def check_repeat_kv(fn, rng):
    """(B, n_kv, T, hd) -> (B, n_kv * n_rep, T, hd), query head j reading key/value head j // n_rep."""
    x = torch.randn(1, 2, 3, 4, generator=rng)
    expect_close("n_kv=2, n_rep=3: heads 0, 1, 2 share kv head 0 and heads 3, 4, 5 kv head 1 (j // n_rep), "
                 "not 0, 1, 0, 1, ...", call_learner("n_kv=2, n_rep=3", fn, x, 3), _repeat_kv(x, 3), atol=0)
    for i in range(5):
        B, n_kv, T, hd, n_rep = (int(n) for n in torch.randint(1, 5, (5,), generator=rng))
        x = torch.randn(B, n_kv, T, hd, generator=rng)
        case = f"case {i}: x {tuple(x.shape)}, n_rep={n_rep}"
        expect_close(case, call_learner(case, fn, x, n_rep), _repeat_kv(x, n_rep), atol=0)


def _reference(x, weights, n_heads, n_kv, mask):
    (wq, bq), (wkv, bkv), (wo, bo) = [(w.double(), b.double()) for w, b in weights]
    (wk, wv), (bk, bv) = wkv.chunk(2), bkv.chunk(2)
    B, T, d = x.shape
    hd = d // n_heads
    x = x.double()
    q = (x @ wq.T + bq).view(B, T, n_heads, hd).transpose(1, 2)
    k = _repeat_kv((x @ wk.T + bk).view(B, T, n_kv, hd).transpose(1, 2), n_heads // n_kv)
    v = _repeat_kv((x @ wv.T + bv).view(B, T, n_kv, hd).transpose(1, 2), n_heads // n_kv)
    scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = scores.softmax(-1).nan_to_num(0.0)
    out = (w @ v).transpose(1, 2).reshape(B, T, d) @ wo.T + bo
    return out.float(), w.float()


def _build(cls, rng, d_model, n_heads, n_kv, case):
    layer = call_learner(case, cls, d_model, n_heads, n_kv)
    expect(isinstance(layer, nn.Module), f"[{case}] GroupedQueryAttention(...) should be an nn.Module")
    kv_width = n_kv * (d_model // n_heads)
    weights = []
    for name, d_out in (("q_proj", d_model), ("kv_proj", 2 * kv_width), ("out_proj", d_model)):
        proj = getattr(layer, name, None)
        expect(isinstance(proj, nn.Linear) and proj.bias is not None,
               f"[{case}] `{name}` should be an nn.Linear with a bias, got {type(proj).__name__}")
        expect(proj.in_features == d_model and proj.out_features == d_out,
               f"[{case}] `{name}` should map {d_model} -> {d_out} features"
               + (" (keys then values, 2 * n_kv_heads * head_dim: they have fewer heads than the queries)" if name == "kv_proj" else "")
               + f", got {proj.in_features} -> {proj.out_features}")
        with torch.no_grad():
            proj.weight.copy_(torch.randn(d_out, d_model, generator=rng) / math.sqrt(d_model))
            proj.bias.copy_(torch.randn(d_out, generator=rng) * 0.2)
        weights.append((proj.weight.detach().clone(), proj.bias.detach().clone()))
    return layer, weights


def _compare(cls, rng, B, T, d_model, n_heads, n_kv, mask, case):
    layer, weights = _build(cls, rng, d_model, n_heads, n_kv, case)
    x = torch.randn(B, T, d_model, generator=rng)
    got = call_learner(case, layer, x) if mask is None else call_learner(case, layer, x, mask)
    expect_tuple(case, got, ("output", "weights"), by="forward")
    out, w = _reference(x, weights, n_heads, n_kv, mask)
    expect_shape(case, got[1], w.shape, name="weights (one map per *query* head)")
    expect_close(case, got[1], w, atol=1e-5, name="weights")
    expect_close(case, got[0], out, atol=1e-5, name="output")


@exercise("03.gqa-forward", points=3, uses="GroupedQueryAttention", forbids=FORBIDS)
def check_forward(cls, rng):
    """Grouped-query self-attention on random sizes, from multi-query (1 kv head) to multi-head."""
    _compare(cls, rng, 2, 5, 12, 6, 2, None, "d_model=12, n_heads=6, n_kv_heads=2: query heads 0-2 share "
             "kv head 0, heads 3-5 kv head 1; scale by 1/√head_dim")
    expect_value_error("GroupedQueryAttention(12, 6, 4): 4 kv heads cannot be shared by 6 query heads",
                       lambda: cls(12, 6, 4), returned="the constructor returned")
    for i in range(5):
        n_kv = randint(rng, 1, 4)
        n_heads = n_kv * randint(rng, 1, 4)
        if i == 0:
            n_kv = 1                                  # multi-query attention
        if i == 1:
            n_kv = n_heads                            # plain multi-head attention
        hd = randint(rng, 1, 5)
        B, T = (int(n) for n in torch.randint(1, 6, (2,), generator=rng))
        _compare(cls, rng, B, T, n_heads * hd, n_heads, n_kv, None,
                 f"case {i}: x ({B}, {T}, {n_heads * hd}), n_heads={n_heads}, n_kv_heads={n_kv}")


@exercise("03.gqa-masked", points=2, uses="GroupedQueryAttention", forbids=FORBIDS)
def check_masked(cls, rng):
    """Boolean masks (True = may attend) broadcastable to (B, n_heads, T, T), with a fully masked row."""
    T = 5
    _compare(cls, rng, 2, T, 8, 4, 2, torch.ones(T, T, dtype=torch.bool).tril(),
             "causal mask (T=5), n_heads=4, n_kv_heads=2: True means *may attend*")
    for i in range(3):
        n_kv = randint(rng, 1, 3)
        n_heads = 2 * n_kv
        B, T = (int(n) for n in torch.randint(1, 6, (2,), generator=rng))
        mask = torch.rand(B, 1, T, T, generator=rng) > 0.4
        mask[..., 0] = True
        if i == 2:
            mask[0, 0, -1] = False
        case = f"case {i}: x ({B}, {T}, {n_heads * 3}), n_heads={n_heads}, n_kv_heads={n_kv}, mask {tuple(mask.shape)}" + (
            ", the last query of batch 0 has every key masked (zero weights)" if i == 2 else "")
        _compare(cls, rng, B, T, n_heads * 3, n_heads, n_kv, mask, case)
