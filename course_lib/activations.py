"""GELU from its formulas, and the activation look-up used by the feed-forward blocks (lesson 10).

GELU(x) = x · Φ(x), Φ the standard normal CDF. BERT uses the exact (erf) form; GPT-2 and
Hugging Face's "gelu_new" use the tanh approximation of Hendrycks & Gimpel (2016).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from .validation import require_choice

_GELU_FORMS = ("none", "tanh")


def gelu(x, approximate: str = "none"):
    """GELU of `x` (any shape).

    approximate="none":  0.5 · x · (1 + erf(x / √2))                       (exact)
    approximate="tanh":  0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))
    """
    if approximate == "none":
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    if approximate == "tanh":
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))
    raise ValueError(f"approximate: expected one of {_GELU_FORMS}, got {approximate!r}")


class GELU(nn.Module):
    """Module form of `gelu`, like `nn.GELU(approximate=...)`."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = require_choice("approximate", approximate, _GELU_FORMS)

    def forward(self, x):
        return gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


#: Names accepted by `get_activation` (and the `activation` argument of the course's blocks).
#: "identity" removes the non-linearity (lesson 10's ablation).
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "identity")


def get_activation(name: str, fused: bool = False) -> nn.Module:
    """A fresh activation module by name: "relu", "gelu" (exact), "gelu_tanh" or "identity".

    fused=True gives PyTorch's `nn.GELU` (one kernel) instead of the course's `GELU`, which
    writes the formula out: the same function (lesson 10 proves it), read once instead of
    5-8 times - what BERT's layers use for speed.
    """
    if name == "relu":
        return nn.ReLU()
    if name in ("gelu", "gelu_tanh"):
        approximate = "none" if name == "gelu" else "tanh"
        return nn.GELU(approximate=approximate) if fused else GELU(approximate)
    if name == "identity":
        return nn.Identity()
    raise ValueError(f"activation: expected one of {ACTIVATIONS}, got {name!r}")
