"""Position information: the sinusoidal table and a learned table (lesson 05).

Self-attention alone is permutation-equivariant; adding a position vector to each token
breaks the symmetry. Both encodings here have a fixed number of rows, `max_len`: asking for
position max_len or beyond raises a ValueError (BERT's 512-token limit is exactly this -
its learned table has 512 rows).
"""
from __future__ import annotations

import torch
from torch import nn

from .validation import require_finite


def sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    """The (max_len, d_model) table of Vaswani et al. (2017), section 3.5:

        PE[p, 2i]   = sin(p / 10000^(2i / d_model))
        PE[p, 2i+1] = cos(p / 10000^(2i / d_model))

    Each pair of columns is a rotation at its own frequency, so PE[p + k] is a fixed linear
    map (a block-diagonal rotation) of PE[p] for every p.
    """
    position = torch.arange(max_len, dtype=torch.float64)[:, None]             # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)                    # (ceil(d/2),)
    angle = position / (10000.0 ** (two_i / d_model))                           # (max_len, ceil(d/2))
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # odd d_model: one fewer cosine column
    return pe.float()  # computed in float64 so large p keeps its precision


def _positions(x, positions, max_len):
    """The position ids of (B, T, d) input; default positions are 0..T-1.

    (B, T) positions give each row its own; (T,) or (1, T) are shared by the batch. Any other
    batch size would broadcast x up to it, a batch the caller never had. A negative id would
    silently read the table from its end, one >= max_len is past the end (lesson 05)."""
    T = x.shape[1]
    if positions is None:
        if T > max_len:
            raise ValueError(f"x: sequence length {T} exceeds max_len={max_len} (the position table has {max_len} rows)")
        return torch.arange(T, device=x.device)
    if positions.dim() == 2 and positions.shape[0] not in (1, x.shape[0]):
        raise ValueError(f"positions: expected batch size {x.shape[0]} like x (or 1, shared), got shape {tuple(positions.shape)}")
    if positions.numel() and (positions.min() < 0 or positions.max() >= max_len):
        raise ValueError(f"positions: ids must lie in [0, {max_len - 1}] (max_len={max_len}), "
                         f"got min {int(positions.min())}, max {int(positions.max())}")
    return positions


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal table: (B, T, d_model) -> (B, T, d_model). No parameters."""

    def __init__(self, d_model: int, max_len: int = 512):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        # a buffer moves with .to(device) but is not trained nor saved in the state dict
        self.register_buffer("pe", sinusoidal_table(max_len, d_model), persistent=False)

    def forward(self, x, positions=None):
        """x: (B, T, d_model); positions: optional (T,) or (B, T) ids, default 0..T-1."""
        pos = _positions(x, positions, self.max_len)
        return x + self.pe[pos].to(x.dtype)                              # (B, T, d_model)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"


class LearnedPositionalEmbedding(nn.Module):
    """Adds a trained (max_len, d_model) table, BERT's choice: (B, T, d_model) -> (B, T, d_model).

    The parameter is named `weight`, like `nn.Embedding` and BERT's `position_embeddings`,
    and starts as N(0, 0.02²) (BERT's initializer_range). Rows for positions never seen in
    training stay at their random initial values: a learned table cannot extrapolate.
    """

    def __init__(self, max_len: int, d_model: int, init_std: float = 0.02):
        super().__init__()
        self.max_len, self.d_model = max_len, d_model
        require_finite("init_std", init_std, minimum=0.0)          # NaN would fill the table
        self.weight = nn.Parameter(torch.randn(max_len, d_model) * init_std)

    def forward(self, x, positions=None):
        """x: (B, T, d_model); positions: optional (T,) or (B, T) ids, default 0..T-1."""
        pos = _positions(x, positions, self.max_len)
        return x + self.weight[pos]                                     # (B, T, d_model)

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, d_model={self.d_model}"
