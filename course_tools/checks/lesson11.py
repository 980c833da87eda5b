"""Graded checks for lesson 11: the causal mask and the decoder layer."""
import torch

from ..grading import CheckFailed, exercise, expect, expect_close, expect_shape
from course_lib.transformer import DecoderLayer as Reference
from course_lib.transformer import causal_mask as reference_mask


def _int(rng, low, high):
    return int(torch.randint(low, high, (1,), generator=rng))


@exercise("11.causal-mask", points=1, uses="causal_mask")
def check_causal_mask(fn, rng):
    """causal_mask(T): a (T, T) bool tensor, True where query t may attend to key s (s <= t)."""
    for T in [5, 1, 2] + [_int(rng, 3, 40) for _ in range(3)]:
        case = f"causal_mask({T})"
        got = fn(T)
        expected = reference_mask(T)
        expect_shape(case, got, (T, T))
        expect(got.dtype == torch.bool,
               f"[{case}] dtype {got.dtype}: return a bool tensor (True = may attend), e.g. with "
               "dtype=torch.bool")
        if T > 1 and torch.equal(got, ~expected):
            raise CheckFailed(f"[{case}] the mask is inverted: in this course True means *may attend* "
                              "(PyTorch's nn.Transformer masks mean the opposite)")
        if T > 1 and torch.equal(got, expected.T):
            raise CheckFailed(f"[{case}] upper instead of lower triangle: row t is the query and may "
                              "see keys 0..t (tril, not triu)")
        if T > 1 and torch.equal(got, expected & ~torch.eye(T, dtype=torch.bool)):
            raise CheckFailed(f"[{case}] the diagonal is masked: a position may attend to itself")
        expect(torch.equal(got, expected),
               f"[{case}] got {got.int().tolist() if T <= 5 else 'a different mask'}, expected "
               f"{expected.int().tolist() if T <= 5 else 'True on and below the diagonal'}")


def _randomize_norms(layer, rng):
    """Non-trivial LayerNorm weights, so a missing or misplaced norm shows."""
    with torch.no_grad():
        for norm in (layer.norm1, layer.norm2, layer.norm3):
            norm.weight.copy_(1 + 0.5 * torch.randn(norm.weight.shape, generator=rng))
            norm.bias.copy_(0.5 * torch.randn(norm.bias.shape, generator=rng))


def _padding(B, T, rng):
    """(B, T) bool, True = real token; every row keeps at least its first token."""
    lengths = torch.randint(1, T + 1, (B,), generator=rng)
    lengths[0] = T
    return torch.arange(T)[None, :] < lengths[:, None]


def _check_layer(cls, rng, norm_first):
    for case_no in range(4):
        n_heads = _int(rng, 1, 5)
        d_model, d_ff = n_heads * _int(rng, 2, 9), _int(rng, 4, 33)
        B, T, S = _int(rng, 1, 4), _int(rng, 1, 8), _int(rng, 1, 9)
        torch.manual_seed(_int(rng, 0, 2**31 - 1))
        reference = Reference(d_model, n_heads, d_ff, norm_first=norm_first).eval()
        _randomize_norms(reference, rng)
        setup = f"DecoderLayer({d_model}, {n_heads}, {d_ff}, norm_first={norm_first})"
        try:
            layer = cls(d_model, n_heads, d_ff, norm_first=norm_first)
        except TypeError as error:
            raise CheckFailed(f"[{setup}] could not be built: {error}; keep the __init__ signature "
                              "(d_model, n_heads, d_ff, norm_first=False)") from error
        missing, unexpected = layer.load_state_dict(reference.state_dict(), strict=False)
        if missing or unexpected:
            raise CheckFailed(f"[{setup}] parameter names differ from the reference: missing "
                              f"{sorted(missing)[:4]}, unexpected {sorted(unexpected)[:4]}; keep the "
                              "given __init__ (self_attn, multihead_attn, linear1, linear2, norm1..3)")
        layer.eval()
        x = torch.randn(B, T, d_model, generator=rng)
        memory = torch.randn(B, S, d_model, generator=rng)
        causal = reference_mask(T)                                             # (T, T)
        tgt_real, src_real = _padding(B, T, rng), _padding(B, S, rng)
        masks = {"no masks": (None, None),
                 "causal self_mask, memory padding mask": (causal, src_real[:, None, None, :]),
                 "causal & target padding self_mask (B, 1, T, T), memory padding mask":
                     (causal & tgt_real[:, None, None, :], src_real[:, None, None, :])}
        for name, (self_mask, memory_mask) in masks.items():
            case = f"{setup}, x {tuple(x.shape)}, memory {tuple(memory.shape)}, {name}"
            with torch.no_grad():
                got = layer(x, memory, self_mask=self_mask, memory_mask=memory_mask)
                expected = reference(x, memory, self_mask=self_mask, memory_mask=memory_mask)
                if torch.is_tensor(got) and got.shape == expected.shape and not torch.allclose(
                        got, expected, atol=1e-5, rtol=1e-5):
                    _diagnose(case, got, layer, reference, x, memory, self_mask, memory_mask, norm_first)
            expect_close(case, got, expected, atol=1e-5, name="the layer's output")


def _diagnose(case, got, layer, reference, x, memory, self_mask, memory_mask, norm_first):
    """Name the usual mistake when the output matches a known wrong variant."""
    close = lambda other: torch.allclose(got, other, atol=1e-5, rtol=1e-5)  # noqa: E731
    if self_mask is not None and close(reference(x, memory, None, memory_mask)):
        raise CheckFailed(f"[{case}] your output equals the reference *without* self_mask: pass "
                          "self_mask to the self-attention (mask=self_mask)")
    if memory_mask is not None and close(reference(x, memory, self_mask, None)):
        raise CheckFailed(f"[{case}] your output equals the reference *without* memory_mask: pass "
                          "memory_mask to the cross-attention")
    other = Reference(reference.d_model, reference.n_heads, reference.linear1.out_features,
                      norm_first=not norm_first).eval()
    other.load_state_dict(reference.state_dict())
    if close(other(x, memory, self_mask, memory_mask)):
        raise CheckFailed(f"[{case}] you computed the {'Post' if norm_first else 'Pre'}-LN layout; "
                          f"norm_first={norm_first} asks for "
                          f"{'x + sublayer(norm(x))' if norm_first else 'norm(x + sublayer(x))'}")


@exercise("11.decoder-layer-post-ln", points=2, uses="DecoderLayer")
def check_post_ln(cls, rng):
    """DecoderLayer(norm_first=False) equals the course's Post-LN layer, with and without masks."""
    _check_layer(cls, rng, norm_first=False)


@exercise("11.decoder-layer-pre-ln", points=1, uses="DecoderLayer")
def check_pre_ln(cls, rng):
    """DecoderLayer(norm_first=True) equals the course's Pre-LN layer, with and without masks."""
    _check_layer(cls, rng, norm_first=True)
