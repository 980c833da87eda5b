"""Token embeddings scaled by √d_model, as in "Attention Is All You Need" (lesson 06).

The table is initialised N(0, 1/d_model) (fairseq's Transformer; also what a tied output
layer wants), so a row has norm ≈ 1; multiplying by √d_model gives entries of variance 1 and
norm ≈ √d_model, comparable with the sinusoidal position vectors (entries of variance 1/2,
norm √(d_model/2)). Lesson 06 measures this balance.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .validation import require_id


class ScaledEmbedding(nn.Module):
    """input_ids (...) -> (..., d_model), looked up and multiplied by √d_model if `scale`.

    The table is the parameter `weight` of shape (vocab_size, d_model) - the same shape as
    `nn.Linear(d_model, vocab_size).weight`, which is why an output layer can share it
    without a transpose (lesson 12).
    """

    def __init__(self, vocab_size: int, d_model: int, scale: bool = True, padding_idx: int | None = None):
        super().__init__()
        if padding_idx is not None:       # -1 would zero the last row
            require_id("padding_idx", padding_idx, vocab_size)
        self.vocab_size, self.d_model, self.scale = vocab_size, d_model, scale
        self.padding_idx = padding_idx
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model) * d_model ** -0.5)
        if padding_idx is not None:
            with torch.no_grad():
                self.weight[padding_idx].zero_()

    def forward(self, input_ids):
        x = F.embedding(input_ids, self.weight, padding_idx=self.padding_idx)  # (..., d_model)
        return x * math.sqrt(self.d_model) if self.scale else x

    def extra_repr(self) -> str:
        return f"{self.vocab_size}, {self.d_model}, scale={self.scale}"
