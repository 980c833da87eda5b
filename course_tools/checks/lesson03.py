"""Graded checks for lesson 03: splitting into heads, merging, and the multi-head module."""
import torch
from torch import nn

from course_lib.attention import MultiHeadAttention as Reference
from course_lib.attention import merge_heads as reference_merge
from course_lib.attention import split_heads as reference_split
from ..grading import CheckFailed, exercise, expect, expect_close

MEMBERS = ("q_proj", "k_proj", "v_proj", "out_proj")


def _draw(rng, low, high):
    return int(torch.randint(low, high, (1,), generator=rng))


@exercise("03.split-heads", points=1, uses="split_heads")
def check_split(fn, rng):
    """split_heads: (B, T, d_model) -> (B, n_heads, T, head_dim), head j = features j·head_dim.."""
    for case in range(5):
        B, T, n_heads, head_dim = _draw(rng, 1, 4), _draw(rng, 1, 7), _draw(rng, 1, 6), _draw(rng, 1, 6)
        x = torch.randn(B, T, n_heads * head_dim, generator=rng)
        expect_close(f"case {case}: x {tuple(x.shape)}, n_heads={n_heads}", fn(x, n_heads),
                     reference_split(x, n_heads), atol=0, rtol=0)
    x = torch.arange(8.0).view(1, 1, 8)
    expect_close("x = [0, 1, ..., 7] as (1, 1, 8), n_heads=2: head 0 must hold features 0..3",
                 fn(x, 2), reference_split(x, 2), atol=0, rtol=0)


@exercise("03.merge-heads", points=1, uses="merge_heads")
def check_merge(fn, rng):
    """merge_heads: (B, n_heads, T, head_dim) -> (B, T, n_heads·head_dim), the inverse of split_heads."""
    for case in range(5):
        B, n_heads, T, head_dim = _draw(rng, 1, 4), _draw(rng, 1, 6), _draw(rng, 1, 7), _draw(rng, 1, 6)
        x = torch.randn(B, n_heads, T, head_dim, generator=rng)
        expect_close(f"case {case}: x {tuple(x.shape)}", fn(x), reference_merge(x), atol=0, rtol=0)
    x = torch.randn(2, 5, 12, generator=rng)
    expect_close("merge_heads(course split_heads(x, 3)) should give back x", fn(reference_split(x, 3)), x,
                 atol=0, rtol=0)


def _pair(cls, d_model, n_heads, rng, case):
    """The learner's module with the reference's (random) weights copied in, and the reference."""
    reference = Reference(d_model, n_heads).eval()
    with torch.no_grad():
        for p in reference.parameters():
            p.copy_(torch.randn(p.shape, generator=rng) / d_model ** 0.5)
    mine = cls(d_model, n_heads)
    expect(isinstance(mine, nn.Module), f"[{case}] MultiHeadAttention should subclass nn.Module")
    for name in MEMBERS:
        layer = getattr(mine, name, None)
        expect(isinstance(layer, nn.Linear),
               f"[{case}] expected a member `{name}` that is an nn.Linear (members {', '.join(MEMBERS)})")
        expect(tuple(layer.weight.shape) == (d_model, d_model),
               f"[{case}] {name}.weight has shape {tuple(layer.weight.shape)}, expected "
               f"{(d_model, d_model)}: every projection is d_model x d_model whatever n_heads is")
    try:
        mine.load_state_dict(reference.state_dict())
    except RuntimeError as error:
        raise CheckFailed(f"[{case}] could not copy the course weights into yours: {error}") from None
    return mine.eval(), reference


def _compare(mine, reference, args, mask, case):
    with torch.no_grad():
        got = mine(*args) if mask is None else mine(*args, mask)
        expected = reference(*args, mask)
    if not (isinstance(got, tuple) and len(got) == 2):
        raise CheckFailed(f"[{case}] return a tuple (output, weights), got {type(got).__name__}")
    expect_close(case, got[1], expected[1], atol=1e-5, name="weights (B, n_heads, T_q, T_k)")
    expect_close(case, got[0], expected[0], atol=1e-5, name="output")


def _random_config(rng):
    n_heads = _draw(rng, 1, 5)
    return n_heads * _draw(rng, 1, 5), n_heads


@exercise("03.mha-self", points=2, uses="MultiHeadAttention")
def check_self_attention(cls, rng):
    """Self- and cross-attention without a mask, with the course's weights copied in."""
    for case in range(4):
        d_model, n_heads = _random_config(rng)
        B, T = _draw(rng, 1, 4), _draw(rng, 1, 7)
        name = f"case {case}: d_model={d_model}, n_heads={n_heads}, self-attention on x ({B}, {T}, {d_model})"
        mine, reference = _pair(cls, d_model, n_heads, rng, name)
        x = torch.randn(B, T, d_model, generator=rng)
        _compare(mine, reference, (x, x, x), None, name)
    d_model, n_heads = 12, 3
    name = "cross-attention: query (2, 3, 12), key = value (2, 5, 12)"
    mine, reference = _pair(cls, d_model, n_heads, rng, name)
    query, memory = torch.randn(2, 3, 12, generator=rng), torch.randn(2, 5, 12, generator=rng)
    _compare(mine, reference, (query, memory, memory), None, name)
    name = "one head (n_heads=1) must equal single-head attention with the full width"
    mine, reference = _pair(cls, 8, 1, rng, name)
    x = torch.randn(2, 4, 8, generator=rng)
    _compare(mine, reference, (x, x, x), None, name)


@exercise("03.mha-masked", points=2, uses="MultiHeadAttention")
def check_masked(cls, rng):
    """Boolean masks (True = may attend) that broadcast to (B, n_heads, T_q, T_k)."""
    d_model, n_heads, B, T = 16, 4, 3, 6
    lengths = torch.tensor([6, 4, 2])
    padding = torch.arange(T)[None, :] < lengths[:, None]                 # (B, T): True = real token
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    masks = {"causal mask (T, T)": causal,
             "padding mask (B, 1, 1, T)": padding[:, None, None, :],
             "causal & padding (B, 1, T, T)": causal & padding[:, None, None, :]}
    for name, mask in masks.items():
        mine, reference = _pair(cls, d_model, n_heads, rng, name)
        x = torch.randn(B, T, d_model, generator=rng)
        _compare(mine, reference, (x, x, x), mask, name)
    name = "a different mask per head (1, n_heads, T, T)"
    per_head = torch.rand(1, n_heads, T, T, generator=rng) > 0.5
    per_head[..., 0] = True                                              # no fully masked rows here
    mine, reference = _pair(cls, d_model, n_heads, rng, name)
    x = torch.randn(B, T, d_model, generator=rng)
    _compare(mine, reference, (x, x, x), per_head, name)
    name = "cross-attention with key padding: query (3, 2, 16), memory (3, 6, 16), mask (3, 1, 1, 6)"
    mine, reference = _pair(cls, d_model, n_heads, rng, name)
    query, memory = torch.randn(B, 2, d_model, generator=rng), torch.randn(B, T, d_model, generator=rng)
    _compare(mine, reference, (query, memory, memory), padding[:, None, None, :], name)
