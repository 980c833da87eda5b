"""Graded checks for lesson 01: attention computed block by block over the keys (online softmax),
returning the output and the log-sum-exp of the scaled scores."""
import math

import torch

from ..grading import CheckFailed, exercise, expect, expect_close, expect_tuple, written


def reference(q, k, v, mask=None):
    """Full-matrix attention in float64: (output, logsumexp over the allowed keys)."""
    q64, k64, v64 = q.double(), k.double(), v.double()
    scores = q64 @ k64.transpose(-2, -1) / math.sqrt(q.shape[-1])        # (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)                                # -inf on fully masked rows
    finite = torch.isfinite(lse)
    weights = torch.where(finite[..., None], (scores - lse.masked_fill(~finite, 0)[..., None]).exp(),
                          torch.zeros((), dtype=torch.float64))
    return (weights @ v64).to(q.dtype), lse.to(q.dtype)


def _ints(rng, low, high, n=1):
    return [int(x) for x in torch.randint(low, high, (n,), generator=rng)]


def _random_case(rng, masked, scale=1.0):
    batch = tuple(_ints(rng, 1, 4, _ints(rng, 0, 3)[0]))
    t_q, t_k, d_k, d_v = _ints(rng, 1, 10, 4)
    block = _ints(rng, 1, 6)[0]
    q = torch.randn(*batch, t_q, d_k, generator=rng) * scale
    k = torch.randn(*batch, t_k, d_k, generator=rng) * scale
    v = torch.randn(*batch, t_k, d_v, generator=rng)
    mask = None
    if masked:   # broadcast over the batch dims: (1, ..., T_q, T_k); every row keeps one key
        mask = torch.rand(*(1 for _ in batch), t_q, t_k, generator=rng) > 0.5
        keep = torch.randint(0, t_k, (t_q,), generator=rng)
        mask[..., torch.arange(t_q), keep] = True
    case = f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}, block_size={block}" + (
        f", mask {tuple(mask.shape)}" if masked else "")
    return (q, k, v, mask, block), case


def _call(fn, case, q, k, v, mask, block):
    try:
        got = fn(q, k, v, mask, block) if mask is not None else fn(q, k, v, block_size=block)
    except (CheckFailed, NotImplementedError):
        raise
    except Exception as error:  # noqa: BLE001 - the learner's code: name the case
        raise CheckFailed(f"[{case}] your code raised {type(error).__name__}: {error}") from None
    return expect_tuple(case, got, ("output", "lse"))


def _compare(fn, args, case, atol=1e-4):
    q, k, v, mask, block = args
    out, lse = _call(fn, case, *args)
    expected_out, expected_lse = reference(q, k, v, mask)
    expect_close(case, lse, expected_lse, atol=atol, rtol=1e-5, name="lse")
    expect_close(case, out, expected_out, atol=atol, rtol=1e-5, name="output")


@exercise("01.blockwise-unmasked", points=2, uses="blockwise_attention")
def check_unmasked(fn, rng):
    """Output and log-sum-exp without a mask, on random shapes, block sizes and large scores."""
    # hint cases first: a missing 1/√d_k, then scores far beyond exp's range (|score| in the hundreds)
    q, k, v = torch.randn(3, 64, generator=rng), torch.randn(7, 64, generator=rng), torch.randn(7, 3, generator=rng)
    _compare(fn, (q, k, v, None, 3), "d_k=64, block_size=3: did you scale the scores by 1/√d_k?")
    args, _ = _random_case(rng, masked=False, scale=25.0)
    q, k, v, _, block = args
    case = (f"large scores (inputs x25, q {tuple(q.shape)}, k {tuple(k.shape)}, block_size={block}): "
            "subtract the running maximum before exp, or exp overflows")
    _compare(fn, args, case, atol=1e-3)
    for _ in range(6):
        args, case = _random_case(rng, masked=False)
        _compare(fn, args, case)
    # a block larger than the sequence, and one key only
    for t_k, block in ((5, 16), (1, 2)):
        q, k, v = torch.randn(2, 4, 8, generator=rng), torch.randn(2, t_k, 8, generator=rng), torch.randn(2, t_k, 5, generator=rng)
        _compare(fn, (q, k, v, None, block), f"T_k={t_k}, block_size={block}")


@exercise("01.blockwise-masked", points=2, uses="blockwise_attention")
def check_masked(fn, rng):
    """Boolean masks (True = may attend) that broadcast over the batch; rows keep at least one key."""
    x = torch.randn(1, 7, 4, generator=rng)
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    _compare(fn, (x, x, x, causal, 3), "causal mask, block_size=3: True means *may attend*")
    q, k, v = torch.randn(2, 3, 6, generator=rng), torch.randn(2, 8, 6, generator=rng), torch.randn(2, 8, 4, generator=rng)
    late = torch.zeros(1, 3, 8, dtype=torch.bool)
    late[..., 5:] = True                  # the first blocks hold no allowed key at all
    _compare(fn, (q, k, v, late, 2), "keys 0-4 masked, block_size=2: a row whose first blocks are "
             "entirely masked (its running maximum is still -inf there)")
    for _ in range(6):
        args, case = _random_case(rng, masked=True)
        _compare(fn, args, case)


@exercise("01.blockwise-fully-masked", points=1, uses="blockwise_attention")
def check_fully_masked(fn, rng):
    """A query whose keys are all masked gets a zero output and lse = -inf, never NaN."""
    q, k, v = torch.randn(2, 4, 8, generator=rng), torch.randn(2, 6, 8, generator=rng), torch.randn(2, 6, 5, generator=rng)
    mask = torch.rand(2, 4, 6, generator=rng) > 0.3
    mask[:, :, 0] = True
    mask[1, 2] = False
    case = "query 2 of batch 1 has every key masked (block_size=4)"
    out, lse = _call(fn, case, q, k, v, mask, 4)
    expect(isinstance(out, torch.Tensor) and not torch.isnan(out).any(),
           f"[{case}] the output contains NaN: a row with no allowed key has nothing to divide by - "
           "give it a zero output")
    expect_close(case, out[1, 2], torch.zeros(5), atol=1e-7, name="output of that row")
    expect(isinstance(lse, torch.Tensor) and lse.shape == (2, 4),
           f"[{case}] lse should have shape (2, 4), got {getattr(lse, 'shape', type(lse).__name__)}")
    got = lse[1, 2].item()
    expect(got == float("-inf"), f"[{case}] lse of that row: expected -inf (the log of an empty sum), got {got}")
    _compare(fn, (q, k, v, mask, 4), "the other rows of the same batch")


written("01.written", points=2, rubric=(
    "q·k sums d_k products of independent components: with unit variance its variance is d_k, so the "
    "scores spread like √d_k; dividing by √d_k brings the variance back to 1 (σ_q²σ_k² in general)",
    "unscaled, large d_k saturates the softmax: one key takes almost all the weight (largest weight about "
    "0.95 of 64 at d_k = 1024)",
    "the cost is the gradient, not overflow: the softmax Jacobian diag(p) - ppᵀ is nearly zero for most "
    "queries, so the gradient reaching q and k is heavy-tailed (most queries starved, a few get large ones)",
    "dividing by d_k over-corrects: the softmax goes nearly uniform and the gradient shrinks with d_k",
    "the argument holds at initialisation (unit-variance inputs): training can move the variance, which is "
    "why some models add QK-norm",
))
