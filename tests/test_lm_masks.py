"""course_lib.lm_masks: the forward (GPT), backward (ELMo's second LM) and bidirectional (BERT)
attention masks, against explicit loops and by what an encoder using them can see."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from course_lib.lm_masks import DIRECTIONS, direction_mask, lm_attention_mask
from course_lib.transformer import TransformerEncoder, causal_mask


def loop_mask(attention_mask, direction):
    """The rule written out one entry at a time."""
    B, T = attention_mask.shape
    out = torch.zeros(B, 1, T, T, dtype=torch.bool)
    for b in range(B):
        for i in range(T):
            for j in range(T):
                allowed = {"forward": j <= i, "backward": j >= i, "bidirectional": True}[direction]
                out[b, 0, i, j] = allowed and bool(attention_mask[b, j])
    return out


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_matches_explicit_loop_with_padding(direction):
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        B, T = int(torch.randint(1, 5, (1,), generator=g)), int(torch.randint(1, 9, (1,), generator=g))
        attention_mask = (torch.rand(B, T, generator=g) < 0.7).long()
        got = lm_attention_mask(attention_mask, direction)
        assert got.dtype == torch.bool and got.shape == (B, 1, T, T)
        assert torch.equal(got, loop_mask(attention_mask, direction))
        assert torch.equal(lm_attention_mask(attention_mask.bool(), direction), got)


def test_forward_is_the_course_causal_mask():
    for T in (1, 2, 7):
        assert torch.equal(direction_mask(T, "forward"), causal_mask(T))
        # the backward mask is the forward mask of the reversed sequence
        assert torch.equal(direction_mask(T, "backward"), causal_mask(T).flip(0, 1))


def _encoder_outputs(ids, mask):
    torch.manual_seed(0)
    emb, enc = nn.Embedding(30, 16), TransformerEncoder(2, 16, 2, 32, norm_first=True)
    with torch.no_grad():
        return enc(emb(ids), mask)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_what_an_encoder_can_see(direction):
    """Causality measured: change the token at position k and see which outputs move."""
    T, k = 8, 4
    ids = torch.randint(0, 30, (3, T), generator=torch.Generator().manual_seed(1))
    changed = ids.clone()
    changed[:, k] = (changed[:, k] + 1) % 30
    mask = lm_attention_mask(torch.ones(3, T, dtype=torch.long), direction)
    moved = (_encoder_outputs(ids, mask) - _encoder_outputs(changed, mask)).abs().amax(dim=(0, 2)) > 1e-6
    expected = {"forward": torch.arange(T) >= k,       # only positions at or after k see it
                "backward": torch.arange(T) <= k,      # only positions at or before k see it
                "bidirectional": torch.ones(T, dtype=torch.bool)}[direction]
    assert torch.equal(moved, expected)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_padding_keys_are_invisible(direction):
    T = 7
    attention_mask = torch.tensor([[1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 0, 0, 0, 0]])
    ids = torch.randint(0, 30, (2, T), generator=torch.Generator().manual_seed(2))
    other = torch.where(attention_mask.bool(), ids, (ids + 7) % 30)   # new tokens under the padding
    mask = lm_attention_mask(attention_mask, direction)
    a, b = _encoder_outputs(ids, mask), _encoder_outputs(other, mask)
    real = attention_mask.bool()
    assert torch.allclose(a[real], b[real], atol=1e-6)
    assert torch.isfinite(a).all()     # empty rows (backward padding queries) give no NaN


def test_bad_inputs():
    with pytest.raises(ValueError, match="direction"):
        direction_mask(4, "left")
    with pytest.raises(ValueError, match="attention_mask"):
        lm_attention_mask(torch.ones(4, dtype=torch.long), "forward")
    with pytest.raises(ValueError, match="attention_mask"):
        lm_attention_mask(torch.full((2, 3), 2), "forward")
    with pytest.raises(ValueError, match="attention_mask"):
        lm_attention_mask(torch.ones(2, 3), "forward")
    with pytest.raises(ValueError, match="direction"):
        lm_attention_mask(torch.ones(2, 3, dtype=torch.long), "both")


def test_elmo_predictive_states_never_see_their_own_token():
    from course_lib.lm_masks import elmo_predictive_states
    B, T, D = 2, 6, 4
    f, b = torch.randn(B, T, D), torch.randn(B, T, D)
    out = elmo_predictive_states(f, b)
    assert out.shape == (B, T, 2 * D)
    for i in range(T):                                   # explicit loop reference
        left = f[:, i - 1] if i > 0 else torch.zeros(B, D)
        right = b[:, i + 1] if i < T - 1 else torch.zeros(B, D)
        assert torch.equal(out[:, i], torch.cat([left, right], -1))
    # with real bodies: changing token k moves the predictive state of every position but k
    ids = torch.randint(0, 30, (B, T), generator=torch.Generator().manual_seed(3))
    changed = ids.clone()
    changed[:, 2] = (changed[:, 2] + 1) % 30
    ones = torch.ones(B, T, dtype=torch.long)
    states = lambda x: elmo_predictive_states(
        _encoder_outputs(x, lm_attention_mask(ones, "forward")),
        _encoder_outputs(x, lm_attention_mask(ones, "backward")))
    moved = (states(ids) - states(changed)).abs().amax(dim=(0, 2)) > 1e-6
    assert not moved[2] and moved[[0, 1, 3, 4, 5]].all()
    with pytest.raises(RuntimeError):                      # torch.cat: the halves must pair up
        elmo_predictive_states(f, b[:, :-1])
