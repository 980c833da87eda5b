"""Graded checks for lesson 20: a prefix-LM (UniLM) mask over padded rows, and ELMo's predictive
states over padded rows.

The lesson builds the forward, backward and bidirectional masks and ELMo's shifted states on full
rows. The exercise goes where it did not: a mask that is bidirectional over a prefix of each row's
real tokens and causal after it, with padding on the left, on the right or in gaps; and ELMo's
states where "the previous/next token" means the previous/next *real* token."""
import torch

from ..grading import CheckFailed, exercise, expect_tensor, randint


LABEL = {"full": "no padding", "right": "right padding", "left": "left padding", "gaps": "padding in gaps",
         "one": "T = 1"}


def reference_mask(attention_mask, prefix_length):
    """Loops, on purpose: key j is visible from query i iff j is real and (j is among the first
    prefix_length real tokens of the row, or j <= i)."""
    B, T = attention_mask.shape
    out = torch.zeros(B, 1, T, T, dtype=torch.bool)
    for b in range(B):
        real = [bool(v) for v in attention_mask[b]]
        rank, in_prefix = 0, []
        for j in range(T):
            in_prefix.append(real[j] and rank < int(prefix_length[b]))
            rank += real[j]
        for i in range(T):
            for j in range(T):
                out[b, 0, i, j] = real[j] and (in_prefix[j] or j <= i)
    return out


def reference_states(forward_states, backward_states, attention_mask):
    """Loops: position i (real) gets [forward at the previous real token ; backward at the next real
    token], zeros where there is none; padding positions are all zeros."""
    B, T, D = forward_states.shape
    out = torch.zeros(B, T, 2 * D, dtype=forward_states.dtype)
    for b in range(B):
        real = [j for j in range(T) if attention_mask[b, j]]
        for k, i in enumerate(real):
            if k > 0:
                out[b, i, :D] = forward_states[b, real[k - 1]]
            if k + 1 < len(real):
                out[b, i, D:] = backward_states[b, real[k + 1]]
    return out


def _mask(rng, B, T, layout):
    lengths = torch.randint(1, T + 1, (B,), generator=rng)
    lengths[0] = T
    if layout == "full":
        lengths[:] = T
    mask = (torch.arange(T)[None, :] < lengths[:, None]).long()
    if layout == "left":
        mask = mask.flip(1)
    elif layout == "gaps":
        mask = (torch.rand(B, T, generator=rng) < 0.6).long()
        mask[:, 0] = 0                         # the first position is padding: offsets matter
        mask[0, :4] = torch.tensor([0, 1, 0, 1])   # a gap inside the prefix of row 0
        if B > 1:
            mask[-1] = 0                       # a row of padding only
    return mask


def _explain(got, expected, attention_mask, prefix_length):
    b, _, i, j = (int(v) for v in (got != expected).nonzero()[0])
    key = "padding" if attention_mask[b, j] == 0 else "a real token"
    return (f"row {b} (attention_mask {attention_mask[b].tolist()}, prefix_length "
            f"{int(prefix_length[b])}), query {i}, key {j} ({key}): expected {bool(expected[b, 0, i, j])}, "
            f"got {bool(got[b, 0, i, j])}")


def _check_masks(fn, rng, layouts):
    for case, layout in enumerate(layouts):
        B = randint(rng, 2, 5)
        T = 1 if layout == "one" else randint(rng, 4, 10)
        attention_mask = _mask(rng, B, T, "full" if layout == "one" else layout)
        real = attention_mask.sum(1)
        prefix = (torch.rand(B, generator=rng) * (real + 1).float()).long()
        if case == 1:
            prefix[:] = 0                       # no prefix: the GPT mask
        if case == 2:
            prefix = real.clone() + 1           # everything in the prefix: the BERT mask
        if case not in (1, 2) and layout != "one":
            prefix[0] = 2                       # row 0's prefix spans padding (left or a gap)
        if attention_mask.dtype != torch.bool and case % 2:
            attention_mask = attention_mask.bool()
        name = f"case {case} ({LABEL[layout]}): attention_mask {tuple(attention_mask.shape)}"
        got = expect_tensor(name, fn(attention_mask.clone(), prefix.clone()), "the mask")
        expected = reference_mask(attention_mask, prefix)
        if got.dtype != torch.bool:
            raise CheckFailed(f"[{name}] return a bool tensor (True = may attend), got {got.dtype}")
        if tuple(got.shape) != tuple(expected.shape):
            raise CheckFailed(f"[{name}] expected shape (B, 1, T, T) = {tuple(expected.shape)}, "
                              f"got {tuple(got.shape)}")
        if not torch.equal(got, expected):
            if torch.equal(got, expected.transpose(-1, -2)):
                raise CheckFailed(f"[{name}] your mask is transposed: entry [b, 0, i, j] is query i, key j")
            raise CheckFailed(f"[{name}] {_explain(got, expected, attention_mask, prefix)}")


@exercise("20.prefix-lm-mask", points=2, uses="prefix_lm_mask")
def check_prefix_lm_mask(fn, rng):
    """Prefix bidirectional, the rest causal: full and right-padded rows, prefix 0 (GPT) and a
    prefix covering every token (BERT)."""
    _check_masks(fn, rng, ("full", "right", "right", "full", "right", "one"))


@exercise("20.padding", points=2, uses="prefix_lm_mask")
def check_padding(fn, rng):
    """Left padding and padding in gaps (prefix counted in real tokens), an all-padding row."""
    _check_masks(fn, rng, ("left", "left", "gaps", "gaps", "left", "gaps"))


@exercise("20.elmo-states", points=2, uses="elmo_predictive_states")
def check_elmo_states(fn, rng):
    """[forward at the previous real token ; backward at the next real token], zeros elsewhere."""
    for case, layout in enumerate(("full", "right", "left", "gaps", "gaps", "one")):
        B = randint(rng, 2, 4)
        T = 1 if layout == "one" else randint(rng, 4, 9)
        D = randint(rng, 1, 6)
        mask = _mask(rng, B, T, "full" if layout == "one" else layout)
        f = torch.randn(B, T, D, generator=rng)
        b = torch.randn(B, T, D, generator=rng)
        name = f"case {case} ({LABEL[layout]}): states ({B}, {T}, {D})"
        got = expect_tensor(name, fn(f.clone(), b.clone(), mask.clone()), "the states")
        expected = reference_states(f, b, mask)
        if tuple(got.shape) != tuple(expected.shape):
            raise CheckFailed(f"[{name}] expected shape (B, T, 2D) = {tuple(expected.shape)}, "
                              f"got {tuple(got.shape)}")
        got = got.detach().to(torch.float32)
        if torch.allclose(got, torch.cat([f, b], dim=-1)):
            raise CheckFailed(f"[{name}] you concatenated the states at i itself: both have seen "
                              f"token i. Use the previous and the next real token's states")
        for half, label in ((slice(0, D), "forward half"), (slice(D, 2 * D), "backward half")):
            bad = ~torch.isclose(got[..., half], expected[..., half], atol=1e-6).all(-1)   # (B, T)
            if bad.any():
                r, i = (int(v) for v in bad.nonzero()[0])
                where = "a padding position (must be zeros)" if mask[r, i] == 0 else "a real token"
                raise CheckFailed(f"[{name}] row {r} (attention_mask {mask[r].tolist()}), position {i}, "
                                  f"{where}: the {label} is wrong (expected "
                                  f"{[round(v, 4) for v in expected[r, i, half].tolist()]}, got "
                                  f"{[round(v, 4) for v in got[r, i, half].tolist()]})")
