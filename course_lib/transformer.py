"""The Transformer block and the models built from it (lessons 09, 11, 12; BERT's layer in Part III).

Masks are boolean, True = may attend, broadcastable to (B, n_heads, T_q, T_k) - the
convention of `course_lib.attention`. (PyTorch's `nn.Transformer*` masks mean the opposite:
True = NOT allowed; invert them with `~` when comparing.)

Layer sub-modules carry PyTorch's names (`self_attn`, `linear1`, `linear2`, `norm1`, ...)
so that `torch_to_course_state_dict` copies weights from `nn.TransformerEncoderLayer`,
`nn.TransformerDecoderLayer` or whole PyTorch stacks.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .activations import get_activation
from .attention import MultiHeadAttention
from .embedding import ScaledEmbedding
from .layernorm import LayerNorm
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from .validation import require_bool_mask, require_rank, require_size, shape_str


# --------------------------------------------------------------------------- masks

def causal_mask(T: int, device=None) -> torch.Tensor:
    """(T, T) bool, True on and below the diagonal: query i may attend to keys 0..i."""
    if not isinstance(T, int) or T < 1:
        raise ValueError(f"T: expected a positive int, got {T!r}")
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def padding_mask(attention_mask) -> torch.Tensor:
    """(B, T) attention_mask (1/True = real token, 0/False = padding) -> (B, 1, 1, T) bool.

    The result broadcasts over heads and queries: every query may attend to the real keys.
    """
    require_rank("attention_mask", attention_mask, rank=2, layout="(B, T)")
    if attention_mask.dtype != torch.bool:
        if attention_mask.is_floating_point() or attention_mask.is_complex():
            raise ValueError(f"attention_mask: expected 0/1 integers or bool, got {attention_mask.dtype}")
        if ((attention_mask != 0) & (attention_mask != 1)).any():
            raise ValueError("attention_mask: expected only 0 (padding) and 1 (token) values")
    return attention_mask.bool()[:, None, None, :]                      # (B, 1, 1, T)


def _check_mask(name, mask, B, n_heads, T_q, T_k):
    if mask is not None:
        require_bool_mask(name, mask, (B, n_heads, T_q, T_k), "(B, n_heads, T_q, T_k)")


def _check_input(name, x, d_model):
    require_rank(name, x, rank=3, layout="(B, T, d_model)")
    require_size(name, x, -1, d_model, "d_model")


# --------------------------------------------------------------------------- layers

class EncoderLayer(nn.Module):
    """Self-attention then a position-wise FFN, each wrapped in a residual and a LayerNorm.

    Post-LN (norm_first=False, the original Transformer and BERT):
        x = norm1(x + dropout1(self_attn(x)))
        x = norm2(x + dropout2(linear2(dropout(act(linear1(x))))))
    Pre-LN (norm_first=True, GPT-2 and most later models):
        x = x + dropout1(self_attn(norm1(x)))
        x = x + dropout2(ffn(norm2(x)))
    The FFN is `course_lib.feedforward.FeedForward`'s, with its members on the layer itself
    (PyTorch's layout) so state dicts copy from `nn.TransformerEncoderLayer`.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0,
                 activation: str = "relu", norm_first: bool = False, layer_norm_eps: float = 1e-5):
        super().__init__()
        self.d_model, self.n_heads, self.norm_first = d_model, n_heads, norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.activation = get_activation(activation)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x, mask=None, return_attention: bool = False):
        """x: (B, T, d_model); mask: bool, broadcastable to (B, n_heads, T, T), True = may attend.

        Returns x (B, T, d_model), or (x, weights (B, n_heads, T, T)) if return_attention.
        """
        _check_input("x", x, self.d_model)
        _check_mask("mask", mask, x.shape[0], self.n_heads, x.shape[1], x.shape[1])
        if self.norm_first:
            a, weights = self._sa_block(self.norm1(x), mask)
            x = x + a
            x = x + self._ff_block(self.norm2(x))
        else:
            a, weights = self._sa_block(x, mask)
            x = self.norm1(x + a)
            x = self.norm2(x + self._ff_block(x))
        return (x, weights) if return_attention else x

    def _sa_block(self, x, mask):
        out, weights = self.self_attn(x, x, x, mask=mask)  # (B, T, d_model), (B, n_heads, T, T)
        return self.dropout1(out), weights

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the encoder's `memory`, then the FFN.

    Post-LN: x = norm1(x + sa(x)); x = norm2(x + ca(x, memory)); x = norm3(x + ffn(x)).
    Pre-LN:  x = x + sa(norm1(x)); x = x + ca(norm2(x), memory); x = x + ffn(norm3(x)).
    Names follow `nn.TransformerDecoderLayer` (`self_attn`, `multihead_attn`, `norm1..3`,
    `dropout1..3`).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0,
                 activation: str = "relu", norm_first: bool = False, layer_norm_eps: float = 1e-5):
        super().__init__()
        self.d_model, self.n_heads, self.norm_first = d_model, n_heads, norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.multihead_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.activation = get_activation(activation)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        """x: (B, T, d_model) targets; memory: (B, S, d_model) encoder output.

        self_mask: bool, broadcastable to (B, n_heads, T, T) - usually causal_mask(T), combined
        with a target padding_mask by `&`. memory_mask: broadcastable to (B, n_heads, T, S),
        usually padding_mask(src_attention_mask). Returns (B, T, d_model).
        """
        _check_input("x", x, self.d_model)
        _check_input("memory", memory, self.d_model)
        if memory.shape[0] != x.shape[0]:
            raise ValueError(f"memory: batch size {memory.shape[0]} differs from x's {x.shape[0]}, "
                             f"got shape {shape_str(memory)}")
        B, T, S = x.shape[0], x.shape[1], memory.shape[1]
        _check_mask("self_mask", self_mask, B, self.n_heads, T, T)
        _check_mask("memory_mask", memory_mask, B, self.n_heads, T, S)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), self_mask)
            x = x + self._ca_block(self.norm2(x), memory, memory_mask)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, self_mask))
            x = self.norm2(x + self._ca_block(x, memory, memory_mask))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, mask):
        return self.dropout1(self.self_attn(x, x, x, mask=mask)[0])

    def _ca_block(self, x, memory, mask):
        # queries from the decoder, keys and values from the encoder output
        return self.dropout2(self.multihead_attn(x, memory, memory, mask=mask)[0])

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def torch_to_course_state_dict(state_dict: dict) -> dict:
    """Rename a PyTorch `nn.Transformer*` state dict for the course's modules.

    PyTorch packs the three input projections of `nn.MultiheadAttention` into one
    `in_proj_weight` (3·d_model, d_model) in the order q, k, v; the course keeps
    `q_proj`, `k_proj`, `v_proj`. Every other key (out_proj, linear1, norm1, ...) is unchanged.
    """
    out = {}
    for key, value in state_dict.items():
        prefix, _, leaf = key.rpartition("in_proj_")
        if leaf in ("weight", "bias") and key.endswith("in_proj_" + leaf):
            for part, chunk in zip(("q_proj", "k_proj", "v_proj"), value.chunk(3, dim=0)):
                out[f"{prefix}{part}.{leaf}"] = chunk.clone()
        else:
            out[key] = value
    return out
