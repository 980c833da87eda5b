"""Single-head self-attention with its own query, key and value projections (lesson 02).

Without projections (q = k = v = x) the score matrix is the Gram matrix x xᵀ: symmetric and
positive semi-definite, so a token can never prefer another token over itself in both
directions, and no score can say "look for something other than what I am". Separate
`q_proj` and `k_proj` make the score a general bilinear form xᵢᵀ W_Qᵀ W_K xⱼ.
"""
from __future__ import annotations

from torch import nn

from .attention import scaled_dot_product_attention


class SelfAttention(nn.Module):
    """One attention head whose queries, keys and values are all computed from the same x.

    The head dimension is d_model (one head, no output projection: lesson 03 adds heads and
    `out_proj`). Member names follow Hugging Face / `MultiHeadAttention`.
    """

    def __init__(self, d_model: int, bias: bool = True):
        super().__init__()
        self.d_model = d_model
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None):
        """x: (B, T, d_model); mask: boolean, True = may attend, broadcastable to (B, T, T).

        Returns (output (B, T, d_model), weights (B, T, T)). (The attention checks the mask.)
        """
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)   # (B, T, d_model) each
        return scaled_dot_product_attention(q, k, v, mask)
