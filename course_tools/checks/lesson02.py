"""Graded checks for lesson 02: a single-head self-attention layer with its own projections."""
import math

import torch
from torch import nn

from ..grading import CheckFailed, exercise, expect, expect_close
from course_lib.self_attention import SelfAttention as Reference


def _build(cls, d_model, rng):
    """The learner's layer and the reference, both holding the same hidden random weights."""
    layer = cls(d_model)
    for name in ("q_proj", "k_proj", "v_proj"):
        proj = getattr(layer, name, None)
        expect(isinstance(proj, nn.Linear),
               f"[d_model={d_model}] `{name}` should be an nn.Linear, got {type(proj).__name__}")
        expect(proj.in_features == d_model and proj.out_features == d_model,
               f"[d_model={d_model}] `{name}` should map {d_model} -> {d_model} features, "
               f"got {proj.in_features} -> {proj.out_features}")
        expect(proj.bias is not None, f"[d_model={d_model}] `{name}` should have a bias "
               "(nn.Linear's default)")
    reference = Reference(d_model)
    with torch.no_grad():
        for name in ("q_proj", "k_proj", "v_proj"):
            weight = torch.randn(d_model, d_model, generator=rng) / math.sqrt(d_model)
            bias = torch.randn(d_model, generator=rng) * 0.1
            for target in (getattr(layer, name), getattr(reference, name)):
                target.weight.copy_(weight)
                target.bias.copy_(bias)
    return layer, reference


def _compare(layer, reference, x, mask, case):
    got = layer(x) if mask is None else layer(x, mask)
    if not (isinstance(got, tuple) and len(got) == 2):
        raise CheckFailed(f"[{case}] forward should return a tuple (output, weights), "
                          f"got {type(got).__name__}")
    expected_out, expected_weights = reference(x, mask)
    expect_close(case, got[1], expected_weights, atol=1e-5, name="weights")
    expect_close(case, got[0], expected_out, atol=1e-5, name="output")


def _sizes(rng):
    B, T = (int(n) for n in torch.randint(1, 6, (2,), generator=rng))
    d_model = int(torch.randint(2, 17, (1,), generator=rng))
    return B, T, d_model


@exercise("02.projections", points=1, uses="SelfAttention")
def check_projections(cls, rng):
    """Three separate nn.Linear(d_model, d_model) projections named q_proj, k_proj, v_proj."""
    for _ in range(3):
        d_model = int(torch.randint(1, 33, (1,), generator=rng))
        layer, _ = _build(cls, d_model, rng)
        projections = [layer.q_proj, layer.k_proj, layer.v_proj]
        expect(len({id(p) for p in projections}) == 3,
               f"[d_model={d_model}] q_proj, k_proj and v_proj must be three different modules, "
               "not one shared layer")


@exercise("02.forward", points=2, uses="SelfAttention")
def check_forward(cls, rng):
    """Output and weights equal the reference on random shapes, with the same weights."""
    for _ in range(5):
        B, T, d_model = _sizes(rng)
        layer, reference = _build(cls, d_model, rng)
        x = torch.randn(B, T, d_model, generator=rng)
        _compare(layer, reference, x, None, f"x {(B, T, d_model)}, no mask")
    layer, reference = _build(cls, 64, rng)
    x = torch.randn(2, 6, 64, generator=rng) * 2
    _compare(layer, reference, x, None, "d_model=64: did you scale the scores by 1/√d_model?")


@exercise("02.masked", points=2, uses="SelfAttention")
def check_masked(cls, rng):
    """Boolean masks (True = may attend): padding (B, 1, T), causal (T, T), a fully masked row."""
    B, T, d_model = 3, 5, 8
    layer, reference = _build(cls, d_model, rng)
    x = torch.randn(B, T, d_model, generator=rng)
    lengths = torch.tensor([5, 3, 1])
    padding = (torch.arange(T)[None, :] < lengths[:, None])[:, None, :]    # (B, 1, T)
    _compare(layer, reference, x, padding, "padding mask (B, 1, T)")
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    _compare(layer, reference, x, causal, "causal mask (T, T): True means *may attend*")
    full = torch.ones(B, T, T, dtype=torch.bool)
    full[1, 2] = False
    out, weights = layer(x, full)
    expect(not torch.isnan(out).any() and not torch.isnan(weights).any(),
           "[fully masked row] the output contains NaN: a query with no allowed key must get zero "
           "weights (lesson 01's scaled_dot_product_attention does this)")
    _compare(layer, reference, x, full, "one fully masked query row")


@exercise("02.not-raw", points=1, uses="SelfAttention")
def check_not_raw(cls, rng):
    """The scores use q = W_Q x and k = W_K x: the layer is not raw q = k = v = x attention."""
    d_model, T = 8, 6
    layer, reference = _build(cls, d_model, rng)
    x = torch.randn(2, T, d_model, generator=rng)
    got = layer(x)
    if not (isinstance(got, tuple) and len(got) == 2):
        raise CheckFailed(f"forward should return a tuple (output, weights), got {type(got).__name__}")
    weights = got[1].detach()
    raw = torch.softmax(x @ x.transpose(-2, -1) / math.sqrt(d_model), dim=-1)
    expect(not torch.allclose(weights, raw, atol=1e-4),
           "your weights equal softmax(x xᵀ/√d): the scores must use q = q_proj(x) and "
           "k = k_proj(x), not the raw x")
    # Symmetric scores S give log w_ij - log w_ji = c_j - c_i (the rows' log-normalisers).
    log_ratio = weights.clamp_min(1e-30).log() - weights.clamp_min(1e-30).log().transpose(-2, -1)
    from_symmetric = log_ratio[..., :1, :] + log_ratio[..., :, :1]
    expect(not torch.allclose(log_ratio, from_symmetric, atol=1e-3),
           "your scores are symmetric (score i->j equals j->i): are q and k computed with the same "
           "projection? q must use q_proj and k must use k_proj")
    expect_close("random W_Q ≠ W_K", weights, reference(x)[1], atol=1e-5, name="weights")
