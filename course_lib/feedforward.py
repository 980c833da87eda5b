"""The position-wise feed-forward block (lesson 10): the same two-layer MLP applied to every token.

    FFN(x) = linear2(dropout(act(linear1(x))))      d_model -> d_ff -> d_model

The member names are PyTorch's (`nn.TransformerEncoderLayer` has `linear1`, `dropout`,
`linear2`). The encoder and decoder layers of `course_lib.transformer` keep these
members on the layer itself, as PyTorch does, so state dicts copy across unchanged.
"""
from __future__ import annotations

from torch import nn

from .activations import get_activation


class FeedForward(nn.Module):
    """Position-wise FFN: (B, T, d_model) -> (B, T, d_model), each position independently."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu"):
        super().__init__()
        self.d_model, self.d_ff = d_model, d_ff
        self.linear1 = nn.Linear(d_model, d_ff)
        self.activation = get_activation(activation)
        self.dropout = nn.Dropout(dropout)  # between the two linears, as in PyTorch and BERT
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        h = self.activation(self.linear1(x))          # (..., d_ff)
        return self.linear2(self.dropout(h))          # (..., d_model)
