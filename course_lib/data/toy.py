"""Small synthetic data sets generated from a seed (lesson 08's two spirals).

Toy tasks isolate an effect and cost nothing to make: every set is drawn from a
`torch.Generator`, so a lesson's data are fixed by its SEED and nothing downloads.
"""
from __future__ import annotations

import math

import torch

from ..validation import require_int


def make_spirals(n: int, generator: torch.Generator, turns: float = 1.5, noise: float = 0.05):
    """Two interleaved 2-D spirals, a classic task that a shallow linear model cannot solve.

    Returns `(x, y)`: `x` (n, 2) float32 points inside roughly [-1, 1]², `y` (n,) int64 labels
    0 or 1, the first n // 2 points in class 0 and the rest in class 1. Arm k is the curve
    r(t) = t, angle(t) = 2π·turns·t + π·k for t in (0, 1], so the second arm is the first
    rotated by 180°; `noise` is the standard deviation of Gaussian jitter added to each point.
    """
    n = require_int("n", n, minimum=2)             # points in both classes; np.int64 goes too
    y = (torch.arange(n) >= n // 2).long()                               # (n,)
    # start a little away from the centre, where the two arms would touch
    t = 0.05 + 0.95 * torch.rand(n, generator=generator)                 # (n,)
    angle = 2 * math.pi * turns * t + math.pi * y
    x = torch.stack([t * angle.cos(), t * angle.sin()], dim=1)           # (n, 2)
    x = x + noise * torch.randn(n, 2, generator=generator)
    return x.float(), y
