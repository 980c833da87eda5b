"""Graded checks for lesson 00: a warm-up exercise that teaches the grading workflow."""
import torch

from ..grading import exercise, expect, expect_close


@exercise("00.softmax", points=1, uses="softmax")
def check_softmax(fn, rng):
    """A numerically stable softmax over the last dimension."""
    for case in range(4):
        shape = tuple(int(n) for n in torch.randint(1, 6, (int(torch.randint(1, 4, (1,), generator=rng)),),
                                                   generator=rng))
        x = torch.randn(shape, generator=rng) * 3
        expect_close(f"random input of shape {shape}", fn(x), torch.softmax(x, dim=-1), atol=1e-6)
    big = torch.tensor([[1000.0, 1001.0, 1002.0]])
    got = fn(big)
    expect(not torch.isnan(got).any(), "[large inputs 1000, 1001, 1002] got NaN: subtract the row "
           "maximum before exp() - softmax(x) = softmax(x - c) for any constant c")
    expect_close("large inputs 1000, 1001, 1002", got, torch.softmax(big, dim=-1), atol=1e-6)
