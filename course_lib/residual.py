"""The residual connection (lesson 08): y = x + sublayer(norm(x)).

The identity path is what lets a deep stack train: the gradient reaching block l is
the gradient at the top *plus* whatever the branches add, never only a product of
Jacobians, and deleting one block only removes one term of the sum. `norm` makes it
the Pre-LN wrapper of GPT-2 and most later Transformers (lesson 09 compares Post-LN).
"""
from __future__ import annotations

from torch import nn

from .validation import shape_str


class Residual(nn.Module):
    """x + sublayer(x), or x + sublayer(norm(x)) when a `norm` module is given (Pre-LN).

    The sublayer must map its input to the same shape: the sum is not allowed to
    broadcast, which would silently change the shape of the residual stream.
    Extra arguments of `forward` (e.g. an attention `mask=`) go to the sublayer.
    """

    def __init__(self, sublayer: nn.Module, norm: nn.Module | None = None):
        super().__init__()
        self.sublayer = sublayer
        self.norm = norm if norm is not None else nn.Identity()

    def forward(self, x, *args, **kwargs):
        out = self.sublayer(self.norm(x), *args, **kwargs)
        if out.shape != x.shape:            # x + out would broadcast: the stream would change shape
            raise ValueError(f"sublayer output: expected the shape of x {shape_str(x)} (a residual adds the two), got shape {shape_str(out)}")
        return x + out
