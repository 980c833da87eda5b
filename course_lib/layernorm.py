"""Layer normalisation written out (lesson 07).

Each token vector is normalised over its own features: no statistic crosses the batch,
so a sentence's output never depends on its neighbours or on padding (the point of
lesson 07). Equal to `torch.nn.LayerNorm` with the same `weight` and `bias`.
"""
from __future__ import annotations

import torch
from torch import nn

from .validation import require_positive


class LayerNorm(nn.Module):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the trailing `normalized_shape` dims.

    The variance is the biased one (divide by n, not n - 1), as in `nn.LayerNorm`.
    Parameters are named `weight` and `bias` so state dicts copy from `nn.LayerNorm`
    and from Hugging Face BERT's LayerNorm.
    """

    def __init__(self, normalized_shape, eps: float = 1e-5):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        # eps <= 0 divides by zero on a constant vector, and a negative one takes the square root
        # of a negative number: NaN
        require_positive("eps", eps)
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(self.normalized_shape))  # the gain, starts at 1
        self.bias = nn.Parameter(torch.zeros(self.normalized_shape))

    def forward(self, x):
        dims = tuple(range(-len(self.normalized_shape), 0))
        mean = x.mean(dim=dims, keepdim=True)                              # (..., 1)
        var = (x - mean).pow(2).mean(dim=dims, keepdim=True)               # biased, (..., 1)
        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}"
