"""Graded checks for lesson 04: the FLOP count of one self-attention layer, against FlopCounterMode."""
import torch

from course_lib.attention import MultiHeadAttention, scaled_dot_product_attention
from course_lib.complexity import count_flops
from ..grading import CheckFailed, exercise, expect


def _as_int(case: str, got) -> int:
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        raise CheckFailed(f"[{case}] return a number (an int), got {type(got).__name__}")
    if got != int(got):
        raise CheckFailed(f"[{case}] a FLOP count is a whole number, got {got}")
    return int(got)


def _hint(got: int, n: int, d: int, with_projections: bool) -> str:
    """Name the usual mistakes by the number they produce."""
    core, projections = 4 * n * n * d, 8 * n * d * d
    expected = core + projections if with_projections else core
    guesses = {  # later entries win where two mistakes give the same number
        n * n * d + n * d * d: "multiply-adds, not FLOPs, and only one product of each kind",
        core // 2 + projections: "only one of QKᵀ and AV counted: both are (n·n·d) products",
        core + 6 * n * d * d: "three projections counted: there is a fourth, the output projection",
        core + projections: "you added the projections, but include_projections=False asks for the core only",
        core: "the attention core alone: the layer also has the Q, K, V and output projections",
        expected // 2: "half the count: FlopCounterMode counts 2 FLOPs per multiply-add",
    }
    return guesses.get(got, "compare with the lesson's table: QKᵀ, AV, and four (n, d)@(d, d) projections")


def _compare(fn, n, d, heads, with_projections, default_argument=False):
    x = torch.randn(1, n, d, device="meta")
    if with_projections:
        expected = count_flops(MultiHeadAttention(d, heads).to("meta"), x, x, x)
        what = f"MultiHeadAttention({d}, n_heads={heads}) on n={n} tokens"
    else:
        heads_x = x.view(1, n, heads, d // heads).transpose(1, 2)     # (1, heads, n, d/heads)
        expected = count_flops(scaled_dot_product_attention, heads_x, heads_x, heads_x)
        what = f"the attention core (QKᵀ, softmax, AV) with {heads} head(s), n={n}, d={d}"
    call = f"attention_flops({n}, {d})" if default_argument else \
        f"attention_flops({n}, {d}, include_projections={with_projections})"
    got = fn(n, d) if default_argument else fn(n, d, include_projections=with_projections)
    got = _as_int(call, got)
    expect(got == expected, f"[{call}] got {got:,}, but FlopCounterMode counts {expected:,} FLOPs for "
                            f"{what} - {_hint(got, n, d, with_projections)}")


def _random_sizes(rng):
    n = int(torch.randint(1, 300, (1,), generator=rng))
    heads = int(torch.randint(1, 9, (1,), generator=rng))
    d = heads * int(torch.randint(1, 24, (1,), generator=rng))
    return n, d, heads


@exercise("04.attention-flops-core", points=2, uses="attention_flops")
def check_core(fn, rng):
    """The attention core (include_projections=False) equals the counter on random n, d and heads."""
    for n, d, heads in [(7, 3, 1), (1, 1, 1)] + [_random_sizes(rng) for _ in range(5)]:
        _compare(fn, n, d, heads, with_projections=False)


@exercise("04.attention-flops-layer", points=2, uses="attention_flops")
def check_layer(fn, rng):
    """The whole layer (projections included, the default) equals the counter on MultiHeadAttention."""
    for n, d, heads in [(5, 4, 2)] + [_random_sizes(rng) for _ in range(5)]:
        _compare(fn, n, d, heads, with_projections=True)
    n, d, heads = _random_sizes(rng)
    _compare(fn, n, d, heads, with_projections=True, default_argument=True)
