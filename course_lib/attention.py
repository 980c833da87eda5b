"""Scaled dot-product attention and multi-head attention (lessons 01-03).

Masks are boolean and mean "may attend" (True) - the convention of
`torch.nn.functional.scaled_dot_product_attention` - and broadcast to (..., T_q, T_k).

Two paths compute the same thing. `scaled_dot_product_attention` below is the formula written
out: it materialises the (T_q, T_k) weights, which lessons 01-12 look at. When nobody asks for
the weights (`MultiHeadAttention(..., need_weights=False)`, as the Transformer and BERT layers
do unless attentions are requested), PyTorch's fused
`torch.nn.functional.scaled_dot_product_attention` computes the output without keeping them -
what Hugging Face's `attn_implementation="sdpa"` does too.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .validation import require_bool_mask, require_divisible, require_positive, require_probability


def scaled_dot_product_attention(q, k, v, mask=None, scale=None, dropout_p=0.0):
    """softmax(q kᵀ · scale) v, with scale = 1/√d_k unless given.

    q: (..., T_q, d_k), k: (..., T_k, d_k), v: (..., T_k, d_v).
    Returns (output (..., T_q, d_v), weights (..., T_q, T_k)).
    A query row whose keys are all masked gets zero weights and a zero output
    (not NaN), so padding rows never poison a batch.
    """
    if scale is not None:
        require_positive("scale", scale)      # NaN, inf or <= 0 would silently spoil every weight
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale

    scores = (q @ k.transpose(-2, -1)) * scale  # (..., T_q, T_k)
    if mask is not None:
        require_bool_mask("mask", mask, tuple(scores.shape), "(..., T_q, T_k)")
        # The most negative finite number rather than -inf: a fully masked row then gives a
        # uniform softmax (no NaN) that the masked_fill below turns into zeros.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = F.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights


def split_heads(x, n_heads: int):
    """(B, T, d_model) -> (B, n_heads, T, head_dim)."""
    B, T, d_model = x.shape
    require_divisible("d_model", d_model, "n_heads", n_heads)
    return x.view(B, T, n_heads, d_model // n_heads).transpose(1, 2)


def merge_heads(x):
    """(B, n_heads, T, head_dim) -> (B, T, n_heads * head_dim)."""
    B, n_heads, T, head_dim = x.shape
    return x.transpose(1, 2).reshape(B, T, n_heads * head_dim)


class MultiHeadAttention(nn.Module):
    """Project, split into heads, attend in each head, merge, project back.

    Member names (`q_proj`, `k_proj`, `v_proj`, `out_proj`) follow Hugging Face and let a
    test copy weights from `torch.nn.MultiheadAttention`.

    forward(query, key, value, mask=None, need_weights=True) -> (output, weights).
    need_weights=True runs the course's `scaled_dot_product_attention` and returns the weights
    (B, n_heads, T_q, T_k); need_weights=False (as in `torch.nn.MultiheadAttention`) runs
    PyTorch's fused kernel and returns None for the weights. The outputs agree to float
    rounding; with dropout (training) both drop attention probabilities at the same rate,
    from different random draws.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        require_divisible("d_model", d_model, "n_heads", n_heads)
        require_probability("dropout", dropout)
        self.d_model, self.n_heads = d_model, n_heads
        self.head_dim = d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = dropout  # on the attention weights, as in BERT and nn.MultiheadAttention

    def forward(self, query, key, value, mask=None, need_weights: bool = True):
        if mask is not None:        # a float mask would be added to the scores by the fused kernel
            require_bool_mask("mask", mask, (query.shape[0], self.n_heads, query.shape[1], key.shape[1]),
                              "(B, n_heads, T_q, T_k)")
        q = split_heads(self.q_proj(query), self.n_heads)  # (B, n_heads, T_q, head_dim)
        k = split_heads(self.k_proj(key), self.n_heads)    # (B, n_heads, T_k, head_dim)
        v = split_heads(self.v_proj(value), self.n_heads)  # (B, n_heads, T_k, head_dim)
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=dropout_p)
        else:
            # Same convention (bool, True = may attend; a fully masked query row gives zeros),
            # but the (T_q, T_k) weights are never stored.
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
            weights = None
        out = self.out_proj(merge_heads(out))                # (B, T_q, d_model)
        return out, weights                                  # weights: (B, n_heads, T_q, T_k)
