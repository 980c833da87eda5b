"""Graded checks for lesson 00: a warm-up exercise that teaches the learning loop
(open, `check(...)`, `course check 00`, `course grade`) on a masked softmax, three items of 1 point:
partial credit shows how the grader counts. (The grader's own tests use this exercise as their fixture.)"""
from contextlib import ExitStack
from unittest import mock

import torch

from ..grader.authoring import (CheckFailed, call_learner, exercise, expect, expect_close, expect_shape, expect_tensor,
                       randint)


def _no_library_softmax():
    """While active, PyTorch's own softmax raises: the task is to write it."""
    def refuse(*args, **kwargs):
        raise CheckFailed("your softmax called PyTorch's softmax (torch.softmax, F.softmax or "
                          "Tensor.softmax); the task is to write it from exp() and sum()")
    stack = ExitStack()
    for owner, name in ((torch, "softmax"), (torch.nn.functional, "softmax"), (torch.Tensor, "softmax"),
                        (torch, "log_softmax"), (torch.nn.functional, "log_softmax"),
                        (torch.Tensor, "log_softmax")):
        stack.enter_context(mock.patch.object(owner, name, refuse))
    return stack


@exercise("00.softmax", points=1, uses="softmax")
def check_softmax(fn, rng):
    """A numerically stable softmax over the last dimension, written from exp() and sum(); no mask."""
    cases = []
    for case in range(4):
        shape = tuple(int(n) for n in torch.randint(1, 6, (randint(rng, 1, 4),),
                                                   generator=rng))
        cases.append((f"random input of shape {shape}", torch.randn(shape, generator=rng) * 3))
    big = torch.tensor([[1000.0, 1001.0, 1002.0]])
    # rows of large magnitude: a wide spread inside a row (subtracting the row's minimum overflows)
    # and rows far apart (subtracting the whole tensor's maximum underflows the lower rows to 0 / 0)
    spread = torch.tensor([[1000.0, 0.0, -1000.0], [-1000.0, -999.0, -998.0], [5.0, 900.0, 2.0]])
    large = [("large rows [1000, 0, -1000], [-1000, -999, -998], [5, 900, 2]", spread)]
    for rank in (1, 2, 3):
        shape = tuple(int(n) for n in torch.randint(2, 6, (rank,), generator=rng))
        offsets = (torch.rand(*shape[:-1], 1, generator=rng) * 2 - 1) * 1000   # one offset per row
        large.append((f"large rows of shape {shape} (offsets in ±1000, spread ±300)",
                      torch.randn(shape, generator=rng) * 300 + offsets))
    expected = [torch.softmax(x, dim=-1) for _, x in cases] + [torch.softmax(big, dim=-1)]
    expected_large = [torch.softmax(x.double(), dim=-1).float() for _, x in large]
    with _no_library_softmax():
        got = [fn(x.clone()) for _, x in cases]
        got_big = fn(big.clone())
        got_large = [fn(x.clone()) for _, x in large]
    for (name, _), mine, reference in zip(cases, got, expected):
        expect_close(name, mine, reference, atol=1e-6)
    expect_tensor("large inputs 1000, 1001, 1002", got_big)
    expect(not torch.isnan(got_big).any(), "[large inputs 1000, 1001, 1002] got NaN: subtract the row "
           "maximum before exp() - softmax(x) = softmax(x - c) for any constant c")
    # float32 spacing at 1000 is 6e-5: an honest x - logsumexp(x) is off by ~1e-5 there
    expect_close("large inputs 1000, 1001, 1002", got_big, expected[-1], atol=1e-4)
    for (name, _), mine, reference in zip(large, got_large, expected_large):
        expect_tensor(name, mine)
        expect(bool(torch.isfinite(mine).all()), f"[{name}] got NaN or inf: subtract each row's own "
               "maximum (x.max(dim=-1, keepdim=True)) - not its minimum (exp overflows) and not the "
               "whole tensor's maximum (the other rows underflow to 0 / 0)")
        expect_close(name, mine, reference, atol=1e-4, rtol=1e-4)


def _reference(x, mask=None):
    """Masked softmax in float64: masked positions 0, a row with nothing kept all 0."""
    y = x.double()
    if mask is None:
        return torch.softmax(y, dim=-1).to(x.dtype)
    keep = mask.expand_as(y)
    weights = torch.softmax(y.masked_fill(~keep, float("-inf")), dim=-1)
    return weights.nan_to_num(0.0).masked_fill(~keep, 0.0).to(x.dtype)


def _masked_calls(fn, cases):
    with _no_library_softmax():
        return [call_learner(name, fn, x.clone(), mask.clone()) for name, x, mask in cases]


def _expect_not_inverted(cases, outputs):
    """Before anything else: an answer that treats True as masked matches the reference with the
    mask flipped, in every case (on the rows that then keep something)."""
    matches = []
    for (name, x, mask), mine in zip(cases, outputs):
        flipped = ~mask.expand_as(x)
        rows = flipped.any(dim=-1)
        if not isinstance(mine, torch.Tensor) or mine.shape != x.shape:
            return
        if bool(rows.any()):
            matches.append(torch.allclose(mine.detach()[rows].to(x.dtype), _reference(x, flipped)[rows],
                                          atol=1e-5, rtol=1e-4))
    if matches and all(matches):
        raise CheckFailed(f"[{cases[0][0]}] every kept position got 0 and the masked ones got the weight: "
                          "the mask is inverted - True means keep (may attend), False means masked")


def _expect_masked(name, mine, x, mask, atol=1e-5):
    expect_shape(name, mine, x.shape)
    keep = mask.expand_as(x)
    kept_rows = keep.any(dim=-1)
    expect(not torch.isnan(mine.detach()[kept_rows]).any(),
           f"[{name}] got NaN in a row that keeps some positions: its kept exp() all came out 0 - subtract "
           "the maximum of the kept scores, not of all of them (a masked score may be the largest)")
    leaked = mine.detach().masked_fill(keep, 0.0).abs()
    expect(float(leaked.max()) == 0.0,
           f"[{name}] a masked position (mask False) got weight {float(leaked.max()):.3g}: "
           "masked positions must get exactly 0 - exclude them before normalising (set their scores to "
           "-inf, or zero their exp), not after")
    sums = mine.detach().double().sum(dim=-1)[kept_rows]
    expect(bool(torch.isfinite(sums).all()) and bool(((sums - 1).abs() < 1e-4).all()),
           f"[{name}] the kept weights of a row should sum to 1, got sums from "
           f"{float(sums.min()):.4g} to {float(sums.max()):.4g}: normalise over "
           "the kept positions only (and subtract the maximum of the kept scores: a huge masked score "
           "must not push the kept ones to exp() = 0)")
    expect_close(name, mine, _reference(x, mask), atol=atol, rtol=1e-4)


def _random_mask(rng, shape, rank_of_mask):
    """A boolean mask broadcastable to `shape` (last dim full), every row keeping at least one."""
    mask_shape = (1,) * (len(shape) - rank_of_mask) + tuple(shape[len(shape) - rank_of_mask:])
    mask = torch.rand(mask_shape, generator=rng) < 0.6
    first = torch.randint(0, shape[-1], mask_shape[:-1] + (1,), generator=rng)
    return mask.scatter(-1, first, True)


@exercise("00.masked-softmax", points=1, uses="softmax")
def check_masked_softmax(fn, rng):
    """`mask` (True = keep, broadcastable to x) gives masked positions weight 0."""
    cases = []
    for case in range(4):
        shape = tuple(int(n) for n in torch.randint(2, 6, (randint(rng, 2, 4),), generator=rng))
        rank = randint(rng, 1, len(shape))          # a mask of lower rank broadcasts (a padding mask)
        mask = _random_mask(rng, shape, rank)
        cases.append((f"random input of shape {shape}, mask of shape {tuple(mask.shape)}",
                      torch.randn(shape, generator=rng) * 3, mask))
    # a masked score far above the kept ones: subtracting the maximum over all positions sends
    # every kept exp() to 0 and the row to 0 / 0
    x = torch.tensor([[2000.0, 1.0, 2.0, 3.0], [0.0, -5.0, 1500.0, 4.0]])
    mask = torch.tensor([[False, True, True, True], [True, True, False, True]])
    cases.append(("masked scores of 2000 and 1500 beside kept scores near 0", x, mask))
    outputs = _masked_calls(fn, cases)
    _expect_not_inverted(cases, outputs)
    for (name, x, mask), mine in zip(cases, outputs):
        expect_tensor(name, mine)
        _expect_masked(name, mine, x, mask)


@exercise("00.fully-masked", points=1, uses="softmax")
def check_fully_masked(fn, rng):
    """A row whose every position is masked comes back all zeros, never NaN; the other rows as usual."""
    cases = []
    for case in range(3):
        rows, width = randint(rng, 3, 6), randint(rng, 2, 6)
        mask = _random_mask(rng, (rows, width), 2)
        dead = torch.randperm(rows, generator=rng)[: randint(rng, 1, rows - 1)]
        mask[dead] = False
        cases.append((f"{rows} rows of {width}, rows {sorted(dead.tolist())} fully masked",
                      torch.randn(rows, width, generator=rng) * 3, mask))
    outputs = _masked_calls(fn, cases)
    _expect_not_inverted(cases, outputs)
    for (name, x, mask), mine in zip(cases, outputs):
        expect_tensor(name, mine)
        dead = ~mask.any(dim=-1)
        expect(not torch.isnan(mine).any(),
               f"[{name}] got NaN: a row with no kept position is 0 / 0 (every exp() is 0, and so is "
               "their sum) - return zeros for such a row")
        expect(float(mine.detach()[dead].abs().max()) == 0.0,
               f"[{name}] a fully masked row should be all zeros (it attends to nothing), got "
               f"{mine.detach()[dead][0].tolist()}")
        _expect_masked(name, mine, x, mask)
