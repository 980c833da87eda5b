"""Graded checks for lesson 00: a warm-up exercise that teaches the learning loop
(open, `check(...)`, `course check 00`, `course grade`)."""
from contextlib import ExitStack
from unittest import mock

import torch

from ..grading import CheckFailed, exercise, expect, expect_close, expect_tensor


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
        shape = tuple(int(n) for n in torch.randint(1, 6, (int(torch.randint(1, 4, (1,), generator=rng)),),
                                                   generator=rng))
        cases.append((f"random input of shape {shape}", torch.randn(shape, generator=rng) * 3))
    big = torch.tensor([[1000.0, 1001.0, 1002.0]])
    expected = [torch.softmax(x, dim=-1) for _, x in cases] + [torch.softmax(big, dim=-1)]
    with _no_library_softmax():
        got = [fn(x.clone()) for _, x in cases]
        got_big = fn(big.clone())
    for (name, _), mine, reference in zip(cases, got, expected):
        expect_close(name, mine, reference, atol=1e-6)
    expect_tensor("large inputs 1000, 1001, 1002", got_big)
    expect(not torch.isnan(got_big).any(), "[large inputs 1000, 1001, 1002] got NaN: subtract the row "
           "maximum before exp() - softmax(x) = softmax(x - c) for any constant c")
    # float32 spacing at 1000 is 6e-5: an honest x - logsumexp(x) is off by ~1e-5 there
    expect_close("large inputs 1000, 1001, 1002", got_big, expected[-1], atol=1e-4)
