"""Graded checks for lesson 20: the attention masks of GPT, ELMo and BERT, and ELMo's states."""
import torch

from course_lib.lm_masks import elmo_predictive_states, lm_attention_mask
from ..grading import CheckFailed, exercise, expect_tensor

DIRECTIONS = ("forward", "backward", "bidirectional")


def _attention_mask(rng, B, T, padded=True):
    """Rows of real tokens followed by padding (at least one real token per row); some rows full."""
    lengths = torch.randint(1, T + 1, (B,), generator=rng) if padded else torch.full((B,), T)
    lengths[0] = T
    return (torch.arange(T)[None, :] < lengths[:, None]).long()


def _explain(got, expected, attention_mask, direction):
    """The first wrong entry, in words."""
    diff = (got != expected).nonzero()
    b, _, i, j = (int(v) for v in diff[0])
    key = "padding" if attention_mask[b, j] == 0 else "a real token"
    return (f"row {b}, query {i}, key {j} ({key}): expected {bool(expected[b, 0, i, j])}, "
            f"got {bool(got[b, 0, i, j])}")


def _check_masks(fn, rng, padded):
    for case in range(9):
        direction = DIRECTIONS[case % 3]
        B, T = int(torch.randint(1, 5, (1,), generator=rng)), int(torch.randint(2, 10, (1,), generator=rng))
        attention_mask = _attention_mask(rng, B, T, padded)
        name = f"case {case}: direction={direction!r}, attention_mask {tuple(attention_mask.shape)}"
        got = expect_tensor(name, fn(attention_mask.clone(), direction), "the mask")
        expected = lm_attention_mask(attention_mask, direction)
        if got.dtype != torch.bool:
            raise CheckFailed(f"[{name}] return a bool tensor (True = may attend), got {got.dtype}")
        if tuple(got.shape) != tuple(expected.shape):
            raise CheckFailed(f"[{name}] expected shape (B, 1, T, T) = {tuple(expected.shape)}, "
                              f"got {tuple(got.shape)}")
        if not torch.equal(got, expected):
            if direction != "bidirectional":
                other = "backward" if direction == "forward" else "forward"
                if torch.equal(got, lm_attention_mask(attention_mask, other)):
                    raise CheckFailed(f"[{name}] you returned the {other} mask: {direction} means "
                                      + ("query i sees keys 0..i" if direction == "forward"
                                         else "query i sees keys i..T-1"))
            raise CheckFailed(f"[{name}] {_explain(got, expected, attention_mask, direction)}")


@exercise("20.direction-masks", points=2, uses="lm_attention_mask")
def check_directions(fn, rng):
    """Forward (GPT), backward (ELMo's second LM) and bidirectional (BERT) masks, no padding."""
    _check_masks(fn, rng, padded=False)


@exercise("20.padding", points=2, uses="lm_attention_mask")
def check_padding(fn, rng):
    """The three masks with padding keys never visible."""
    _check_masks(fn, rng, padded=True)


@exercise("20.elmo-states", points=2, uses="elmo_predictive_states")
def check_elmo_states(fn, rng):
    """[forward[i-1] ; backward[i+1]], zeros outside the sequence."""
    for case in range(5):
        B = int(torch.randint(1, 4, (1,), generator=rng))
        T = int(torch.randint(2, 9, (1,), generator=rng))
        D = int(torch.randint(1, 6, (1,), generator=rng))
        f, b = torch.randn(B, T, D, generator=rng), torch.randn(B, T, D, generator=rng)
        name = f"case {case}: states ({B}, {T}, {D})"
        got = expect_tensor(name, fn(f.clone(), b.clone()), "the states")
        expected = elmo_predictive_states(f, b)
        if tuple(got.shape) != tuple(expected.shape):
            raise CheckFailed(f"[{name}] expected shape (B, T, 2D) = {tuple(expected.shape)}, "
                              f"got {tuple(got.shape)}")
        got = got.to(torch.float32)
        if torch.allclose(got, torch.cat([f, b], dim=-1)):
            raise CheckFailed(f"[{name}] you concatenated the states at i itself: both have seen "
                              f"token i, so they cannot be used to predict it. Use forward[i-1] "
                              f"and backward[i+1]")
        for half, label in ((slice(0, D), "forward half"), (slice(D, 2 * D), "backward half")):
            bad = ~torch.isclose(got[..., half], expected[..., half], atol=1e-6).all(-1)   # (B, T)
            if bad.any():
                r, i = (int(v) for v in bad.nonzero()[0])
                raise CheckFailed(f"[{name}] row {r}, position {i}: the {label} is wrong "
                                  f"(expected {expected[r, i, half].tolist()}, got "
                                  f"{got[r, i, half].tolist()})")
