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

from .validation import (require_bool_mask, require_divisible, require_floating, require_input_dtype,
                         require_positive, require_positive_int, require_probability, require_rank,
                         require_same_dtype, require_size, shape_str)


def scaled_dot_product_attention(q, k, v, mask=None, scale=None, dropout_p=0.0):
    """softmax(q kᵀ · scale) v, with scale = 1/√d_k unless given.

    q: (..., T_q, d_k), k: (..., T_k, d_k), v: (..., T_k, d_v).
    Returns (output (..., T_q, d_v), weights (..., T_q, T_k)).
    A query row whose keys are all masked gets zero weights and a zero output
    (not NaN), so padding rows never poison a batch.
    """
    require_rank("q", q, min_rank=2, layout="(..., T_q, d_k)")
    require_rank("k", k, min_rank=2, layout="(..., T_k, d_k)")
    require_rank("v", v, min_rank=2, layout="(..., T_k, d_v)")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"k: last dim must equal q's d_k={q.shape[-1]}, got shape {shape_str(k)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"v: must have T_k={k.shape[-2]} rows like k, got shape {shape_str(v)}")
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(f"k: leading (batch) dims must broadcast with q's {tuple(q.shape[:-2])} "
                         f"and v's {tuple(v.shape[:-2])}, got shape {shape_str(k)}") from None
    require_floating("q", q)
    require_same_dtype("k", k, "q", q)
    require_same_dtype("v", v, "q", q)
    if scale is not None:
        require_positive("scale", scale)      # NaN, inf or <= 0 would silently spoil every weight
    require_probability("dropout_p", dropout_p)
    d_k = q.shape[-1]
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale

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
    require_rank("x", x, rank=3, layout="(B, T, d_model)")
    require_positive_int("n_heads", n_heads)
    B, T, d_model = x.shape
    require_divisible("d_model", d_model, "n_heads", n_heads)
    return x.view(B, T, n_heads, d_model // n_heads).transpose(1, 2)


def merge_heads(x):
    """(B, n_heads, T, head_dim) -> (B, T, n_heads * head_dim)."""
    require_rank("x", x, rank=4, layout="(B, n_heads, T, head_dim)")
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
        require_positive_int("d_model", d_model)
        require_positive_int("n_heads", n_heads)
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
        for name, x, proj in (("query", query, self.q_proj), ("key", key, self.k_proj),
                              ("value", value, self.v_proj)):
            require_rank(name, x, rank=3, layout="(B, T, d_model)")
            require_size(name, x, -1, self.d_model, "d_model")
            require_input_dtype(name, x, proj)
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(f"value: expected (B, T_k) = {tuple(key.shape[:2])} like key, "
                             f"got shape {shape_str(value)}")
        if query.shape[0] != key.shape[0]:
            raise ValueError(f"key: batch size {key.shape[0]} differs from query's {query.shape[0]}")
        q = split_heads(self.q_proj(query), self.n_heads)  # (B, n_heads, T_q, head_dim)
        k = split_heads(self.k_proj(key), self.n_heads)    # (B, n_heads, T_k, head_dim)
        v = split_heads(self.v_proj(value), self.n_heads)  # (B, n_heads, T_k, head_dim)
        if mask is not None:
            B, T_q, T_k = query.shape[0], query.shape[1], key.shape[1]
            require_bool_mask("mask", mask, (B, self.n_heads, T_q, T_k), "(B, n_heads, T_q, T_k)")
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
