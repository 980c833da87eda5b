"""SelfAttention (lesson 02) against PyTorch's single-head nn.MultiheadAttention and F.sdpa."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_lib.self_attention import SelfAttention

D = 16


def _pair(seed=0):
    """A course SelfAttention and a 1-head nn.MultiheadAttention with the same projections
    and an identity output projection (our layer has none)."""
    torch.manual_seed(seed)
    ours = SelfAttention(D)
    ref = nn.MultiheadAttention(D, 1, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight,
                                            ours.v_proj.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        ref.out_proj.weight.copy_(torch.eye(D))
        ref.out_proj.bias.zero_()
    return ours, ref


@pytest.mark.parametrize("masking", ["none", "padding", "causal"])
def test_matches_torch_multihead_attention(masking):
    g = torch.Generator().manual_seed(1)
    ours, ref = _pair()
    B, T = 3, 6
    x = torch.randn(B, T, D, generator=g)
    mask = None
    if masking == "padding":
        lengths = torch.tensor([6, 4, 1])
        mask = (torch.arange(T)[None, :] < lengths[:, None])[:, None, :]     # (B, 1, T)
    elif masking == "causal":
        mask = torch.ones(T, T, dtype=torch.bool).tril()                      # (T, T)
    # nn.MultiheadAttention's boolean masks mean the opposite: True = may NOT attend
    kwargs = {}
    if mask is not None:
        kwargs["attn_mask"] = ~mask.expand(B, T, T)
    expected, expected_w = ref(x, x, x, need_weights=True, **kwargs)
    got, got_w = ours(x, mask)
    assert got.shape == (B, T, D) and got_w.shape == (B, T, T)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_w, expected_w, atol=1e-6, rtol=1e-5)


def test_matches_functional_sdpa_on_projected_inputs():
    g = torch.Generator().manual_seed(2)
    ours, _ = _pair(3)
    x = torch.randn(2, 5, D, generator=g)
    q, k, v = ours.q_proj(x), ours.k_proj(x), ours.v_proj(x)
    torch.testing.assert_close(ours(x)[0], F.scaled_dot_product_attention(q, k, v),
                               atol=1e-5, rtol=1e-5)


def test_identity_projections_give_raw_attention_and_random_ones_do_not():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(2, 7, D, generator=g)
    raw_w = torch.softmax(x @ x.transpose(1, 2) / math.sqrt(D), dim=-1)
    layer = SelfAttention(D)
    _, w = layer(x)
    assert (w - raw_w).abs().max() > 0.05          # the projections change who attends to whom
    with torch.no_grad():
        for proj in (layer.q_proj, layer.k_proj, layer.v_proj):
            proj.weight.copy_(torch.eye(D))
            proj.bias.zero_()
    out, w = layer(x)
    torch.testing.assert_close(w, raw_w, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(out, raw_w @ x, atol=1e-5, rtol=1e-5)


def test_fully_masked_row_is_zero_not_nan():
    layer = SelfAttention(D)
    x = torch.randn(1, 4, D)
    mask = torch.ones(1, 4, 4, dtype=torch.bool)
    mask[0, 2] = False
    out, w = layer(x, mask)
    assert not out.isnan().any()
    assert torch.equal(w[0, 2], torch.zeros(4)) and torch.equal(out[0, 2], torch.zeros(D))


@pytest.mark.parametrize("bad, match", [
    (lambda: torch.ones(4, 4), "torch.bool"),
    (lambda: torch.ones(3, 4, 4, dtype=torch.bool), "does not broadcast"),
])
def test_a_bad_mask_is_named(bad, match):
    """The mask is what the attention checks (a float one would read as a score bias)."""
    with pytest.raises(ValueError, match=rf"^mask: .*{match}"):
        SelfAttention(D)(torch.randn(2, 4, D), bad())
