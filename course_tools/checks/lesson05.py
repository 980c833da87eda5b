"""Graded checks for lesson 05: rotary position embeddings (RoPE), the sinusoids' frequencies used to
rotate queries and keys instead of being added to the input."""
import torch

from ..grading import call_learner, exercise, expect, expect_close, expect_value_error, randint


def reference(x, positions=None, base=10000.0):
    """Interleaved pairs (2i, 2i+1) rotated by position · base^(-2i/d), angles in float64."""
    d, T = x.shape[-1], x.shape[-2]
    positions = torch.arange(T) if positions is None else positions
    inv_freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)        # (d/2,)
    angle = positions.to(torch.float64)[..., None] * inv_freq                    # (..., T, d/2)
    cos, sin = angle.cos(), angle.sin()
    even, odd = x.double()[..., 0::2], x.double()[..., 1::2]
    out = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)
    return out.to(x.dtype)




def _shape(rng, d=None):
    lead = tuple(int(n) for n in torch.randint(1, 4, (randint(rng, 0, 3),), generator=rng))
    T = randint(rng, 1, 12)
    d = d or 2 * randint(rng, 1, 9)
    return (*lead, T, d)


@exercise("05.rope", points=2, uses="apply_rotary")
def check_rope(fn, rng):
    """Default positions 0..T-1 on random shapes: pairs (2i, 2i+1), angle p·base^(-2i/d), counter-clockwise."""
    x = torch.randn(2, 6, 8, generator=rng)
    expect_close("x (2, 6, 8): rotate the *adjacent* pairs (x[2i], x[2i+1]) - the pairs of the sinusoidal "
                 "table - counter-clockwise, by p·10000^(-2i/d)", call_learner("x (2, 6, 8)", fn, x), reference(x), atol=1e-5)
    for i in range(5):
        x = torch.randn(*_shape(rng), generator=rng)
        case = f"case {i}: x {tuple(x.shape)}"
        expect_close(case, call_learner(case, fn, x), reference(x), atol=1e-5)
    x = torch.randn(3, 1, 4, generator=rng)
    expect_close("one token, x (3, 1, 4): position 0 is the identity", call_learner("x (3, 1, 4)", fn, x), x, atol=1e-6)
    x = torch.randn(5, 6, generator=rng)
    case = "base=500.0, x (5, 6)"
    expect_close(case, call_learner(case, fn, x, base=500.0), reference(x, base=500.0), atol=1e-5)


@exercise("05.rope-positions", points=2, uses="apply_rotary")
def check_positions(fn, rng):
    """Explicit positions: an offset (a cache), per-sequence positions, and positions up to 20,000."""
    x = torch.randn(2, 4, 8, generator=rng)
    offset = torch.arange(10, 14)
    case = "x (2, 4, 8), positions 10..13 (tokens appended after a 10-token cache)"
    expect_close(case, call_learner(case, fn, x, offset), reference(x, offset), atol=1e-5)
    x = torch.randn(3, 5, 6, generator=rng)
    per_row = torch.randint(0, 100, (3, 5), generator=rng)
    case = "x (3, 5, 6), positions (3, 5): each sequence has its own positions"
    expect_close(case, call_learner(case, fn, x, per_row), reference(x, per_row), atol=1e-5)
    x = torch.randn(2, 6, 16, generator=rng) * 3
    far = torch.randint(15000, 20001, (6,), generator=rng)
    case = f"x (2, 6, 16), positions {far.tolist()}: compute the angles in float64"
    expect_close(case, call_learner(case, fn, x, far), reference(x, far), atol=2e-5)
    # relative: rotating q at p and k at p + s gives the same score for every p
    q, k = torch.randn(1, 8, generator=rng), torch.randn(1, 8, generator=rng)
    shift = randint(rng, 1, 20)
    scores = [(call_learner("relative", fn, q, torch.tensor([p])) * call_learner("relative", fn, k, torch.tensor([p + shift]))).sum().item()
              for p in (0, 7, 1000)]
    expect(max(scores) - min(scores) < 1e-4, f"[q at p, k at p + {shift}, p = 0, 7, 1000] the scores "
           f"{[round(s, 5) for s in scores]} should not depend on p: RoPE's score depends on the offset only")
    for i in range(3):
        x = torch.randn(*_shape(rng), generator=rng, dtype=torch.float64)
        pos = torch.randint(0, 5000, (x.shape[-2],), generator=rng)
        case = f"case {i}: float64 x {tuple(x.shape)}, random positions"
        got = call_learner(case, fn, x, pos)
        expect(isinstance(got, torch.Tensor) and got.dtype == torch.float64,
               f"[{case}] return x's dtype (float64), got {getattr(got, 'dtype', type(got).__name__)}")
        expect_close(case, got, reference(x, pos), atol=1e-9, rtol=1e-9)


@exercise("05.rope-odd", points=1, uses="apply_rotary")
def check_odd(fn, rng):
    """An odd feature size has a coordinate without a partner: ValueError, not a silent result."""
    for d in (5, 1):
        x = torch.randn(2, 3, d, generator=rng)
        expect_value_error(f"x (2, 3, {d}): an odd last dimension", lambda: fn(x), what=" naming the size")
    x = torch.randn(4, 2, generator=rng)
    expect_close("x (4, 2): d = 2 is one pair", call_learner("x (4, 2)", fn, x), reference(x), atol=1e-5)
