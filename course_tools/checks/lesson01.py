"""Graded checks for lesson 01: scaled dot-product attention with masks."""
import torch

from course_lib.attention import scaled_dot_product_attention as reference
from ..grading import CheckFailed, exercise, expect, expect_close


def _random_case(rng, masked: bool):
    batch = tuple(int(n) for n in torch.randint(1, 4, (int(torch.randint(0, 3, (1,), generator=rng)),),
                                               generator=rng))
    t_q, t_k, d_k, d_v = (int(n) for n in torch.randint(1, 9, (4,), generator=rng))
    q = torch.randn(*batch, t_q, d_k, generator=rng)
    k = torch.randn(*batch, t_k, d_k, generator=rng)
    v = torch.randn(*batch, t_k, d_v, generator=rng)
    mask = None
    if masked:  # broadcast over the batch dims on purpose: (1, ..., T_q, T_k)
        mask = torch.rand(*(1 for _ in batch), t_q, t_k, generator=rng) > 0.4
        mask[..., 0] = True  # keep every row attendable here; fully masked rows are their own item
    return (q, k, v, mask), f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}" + (
        f", mask {tuple(mask.shape)}" if masked else "")


def _compare(fn, args, case):
    q, k, v, mask = args
    got = fn(q, k, v) if mask is None else fn(q, k, v, mask)
    if not (isinstance(got, tuple) and len(got) == 2):
        raise CheckFailed(f"[{case}] return a tuple (output, weights), got {type(got).__name__}")
    expected_out, expected_weights = reference(q, k, v, mask)
    expect_close(case, got[1], expected_weights, atol=1e-5, name="weights")
    expect_close(case, got[0], expected_out, atol=1e-5, name="output")


@exercise("01.sdpa-unmasked", points=2, uses="scaled_dot_product_attention")
def check_unmasked(fn, rng):
    """Attention without a mask on random shapes (including batch dims)."""
    for _ in range(6):
        args, case = _random_case(rng, masked=False)
        _compare(fn, args, case)
    q = torch.randn(4, 64, generator=rng) * 3
    _compare(fn, (q, q, q, None), "large d_k=64: did you divide by √d_k?")


@exercise("01.sdpa-masked", points=2, uses="scaled_dot_product_attention")
def check_masked(fn, rng):
    """Boolean masks (True = may attend) that broadcast over the batch."""
    for _ in range(6):
        args, case = _random_case(rng, masked=True)
        _compare(fn, args, case)
    x = torch.randn(1, 5, 4, generator=rng)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    _compare(fn, (x, x, x, causal), "causal mask: True means *may attend*")


@exercise("01.sdpa-fully-masked", points=1, uses="scaled_dot_product_attention")
def check_fully_masked(fn, rng):
    """A query row whose keys are all masked gets zero weights and a zero output, not NaN."""
    q, k, v = (torch.randn(2, 4, 8, generator=rng) for _ in range(3))
    mask = torch.ones(2, 4, 4, dtype=torch.bool)
    mask[1, 2] = False
    out, weights = fn(q, k, v, mask)
    expect(not torch.isnan(out).any() and not torch.isnan(weights).any(),
           "[fully masked row] the output contains NaN: fill masked scores with a large negative "
           "finite number (or zero the weights of fully masked rows)")
    expect_close("fully masked row", weights[1, 2], torch.zeros(4), atol=1e-7, name="weights of that row")
    expect_close("fully masked row", out[1, 2], torch.zeros(8), atol=1e-7, name="output of that row")
    _compare(fn, (q, k, v, mask), "the other rows of the same batch")
