"""Graded checks for lesson 00: a warm-up exercise that teaches the learning loop
(open, `check(...)`, `course check 00`, `course grade`)."""
from contextlib import ExitStack
from unittest import mock

import torch

from ..grading import CheckFailed, exercise, expect, expect_close, expect_tensor, randint


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
    """A numerically stable softmax over the last dimension, written from exp() and sum()."""
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
