"""Transformer-XL (lesson 22): segment-level recurrence and relative positional attention.

Dai et al., *Transformer-XL: Attentive Language Models Beyond a Fixed-Length Context* (2019).

A vanilla Transformer LM cuts a long text into segments and processes each one on its own: a
token near the start of a segment sees almost nothing. Transformer-XL keeps, for every layer, the
hidden states of the previous segment(s) as a **memory** (at most `mem_len` positions, gradient
stopped), and lets the current segment attend over `[memory; segment]`. Reused memory breaks
absolute positions (position 3 of the memory and position 3 of the segment would get the same
vector), so attention scores are built from the **relative distance** i - j instead:

    A[i, j] = (q_i + u) · k_j  +  (q_i + v) · W_R R[i - j]          (Dai et al., eq. 4, §3.3)

with R the sinusoid of the distance, W_R a projection of its own, u and v learned per-head biases
that replace the query's dot product with an absolute position. The distance term is computed for
every (query, distance) pair in one matmul and moved into place by the *relative shift*.

Layout: batch first, `(B, T, d_model)`; memory is a list with one `(B, M, d_model)` tensor per
layer (the input of that layer, as in the reference implementation).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .validation import (require_choice, require_divisible, require_int, require_positive_int,
                         require_same_dtype, require_token_ids, shape_str)

# "absolute": sinusoids of 0..T-1 added to every segment (each segment restarts at 0);
# "absolute, counting": positions continue across segments (the caller passes the segment's offset)
POSITIONS = ("relative", "absolute", "absolute, counting")


# ------------------------------------------------------------ positions and the relative shift

def relative_sinusoid(klen: int, d_model: int, device=None) -> torch.Tensor:
    """R: (klen, d_model), row c is the sinusoid of distance klen - 1 - c (distances descending).

    As in the reference implementation the sines fill the first half of the columns and the
    cosines the second half; distance 0 sits in the last row.
    """
    distance = torch.arange(klen - 1, -1, -1, dtype=torch.float64, device=device)     # (klen,)
    inv_freq = 1.0 / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64, device=device) / d_model)
    angle = distance[:, None] * inv_freq[None, :]                                     # (klen, d/2)
    return torch.cat([angle.sin(), angle.cos()], dim=-1).float()                      # (klen, d_model)


def rel_shift(x: torch.Tensor) -> torch.Tensor:
    """Move scores indexed by (query i, distance column c) to (query i, key j).

    x: (..., Q, K) with K >= Q, where column c holds distance K - 1 - c (the layout of
    `relative_sinusoid`) and query i sits at key position i + K - Q (memory of K - Q first).
    Returns y of the same shape with y[..., i, j] = x[..., i, j + Q - 1 - i] wherever j <= i + K - Q,
    i.e. y[i, j] is the score for distance (i + K - Q) - j. Entries with j > i + K - Q (the future,
    masked anyway) hold leftovers.

    The trick (Dai et al., appendix B): pad one zero column on the left, read the (Q, K + 1)
    block as (K + 1, Q), drop the first row, read it back as (Q, K). Each row ends up shifted
    left by one more than the row above: no gather, no index tensor.
    """
    Q, K = x.shape[-2], x.shape[-1]
    if K < Q:           # the reshapes would go through and return garbage
        raise ValueError(f"x: expected K >= Q (keys = memory + queries), got shape {shape_str(x)}")
    padded = F.pad(x, (1, 0))                                               # (..., Q, K + 1)
    padded = padded.reshape(*x.shape[:-2], K + 1, Q)                        # (..., K + 1, Q)
    return padded[..., 1:, :].reshape(x.shape)                             # (..., Q, K)


def rel_shift_by_index(x: torch.Tensor) -> torch.Tensor:
    """The same as `rel_shift` on the causal part, with an explicit gather (a slow reference).

    Entries with j > i + K - Q are 0 here.
    """
    Q, K = x.shape[-2], x.shape[-1]
    i = torch.arange(Q, device=x.device)[:, None]
    j = torch.arange(K, device=x.device)[None, :]
    column = j + Q - 1 - i                                                  # (Q, K)
    valid = column <= K - 1
    index = column.clamp(max=K - 1).expand(*x.shape)
    return torch.gather(x, -1, index).masked_fill(~valid, 0.0)


def memory_mask(query_len: int, mem_len: int, device=None) -> torch.Tensor:
    """(Q, M + Q) bool, True = may attend: query i sees all M memory slots and segment keys <= i."""
    i = torch.arange(query_len, device=device)[:, None]
    j = torch.arange(mem_len + query_len, device=device)[None, :]
    return j <= i + mem_len


def update_memory(memory: torch.Tensor, hidden: torch.Tensor, mem_len: int) -> torch.Tensor:
    """The next memory of one layer: the last `mem_len` positions of [memory; hidden], detached.

    memory: (B, M, d), hidden: (B, T, d) -> (B, min(M + T, mem_len), d). mem_len = 0 gives an
    empty (B, 0, d) memory (a vanilla Transformer). Detached: the gradient stops at the segment
    boundary, so training costs one segment of backpropagation however long the memory reaches.
    """
    require_int("mem_len", mem_len, minimum=0)       # a negative one would keep nothing
    if memory.shape[1]:       # torch.cat would silently promote float32 memory to float64 (an
        require_same_dtype("hidden", hidden, "memory", memory)     # empty one has no values)
    both = torch.cat([memory, hidden], dim=1)                               # (B, M + T, d)
    start = max(0, both.shape[1] - mem_len)                                 # not [-mem_len:]: -0 is 0
    return both[:, start:].detach()


# ------------------------------------------------------------ the layer

class RelativeMultiHeadAttention(nn.Module):
    """Multi-head attention over [memory; segment] with Transformer-XL's relative scores.

    With `pos_emb=None` the distance terms are skipped (plain content attention q·k): the
    absolute-position variant of the lesson, same module otherwise.
    """

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        require_divisible("d_model", d_model, "n_heads", n_heads)
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.q_net = nn.Linear(d_model, d_model, bias=False)        # W_q
        self.kv_net = nn.Linear(d_model, 2 * d_model, bias=False)   # W_{k,E}, W_v
        self.r_net = nn.Linear(d_model, d_model, bias=False)        # W_{k,R}: its own key map for R
        self.u = nn.Parameter(torch.zeros(n_heads, self.head_dim))  # content bias (replaces U_iᵀ W_qᵀ)
        self.v = nn.Parameter(torch.zeros(n_heads, self.head_dim))  # position bias
        self.out = nn.Linear(d_model, d_model, bias=False)
        self.d_model = d_model

    def _heads(self, x):                                            # (B, L, d) -> (B, H, L, dh)
        return x.view(x.shape[0], x.shape[1], self.n_heads, self.head_dim).transpose(1, 2)

    def scores(self, h, context, pos_emb=None):
        """Pre-softmax scores (B, H, T, M + T) of queries h over keys context = [memory; h]."""
        k, _ = self.kv_net(context).chunk(2, dim=-1)
        return self._scores(h, self._heads(k), pos_emb)

    def _scores(self, h, k, pos_emb):
        q = self._heads(self.q_net(h))                              # (B, H, T, dh)
        if pos_emb is None:                                         # k: (B, H, M+T, dh)
            return q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        r = self.r_net(pos_emb).view(-1, self.n_heads, self.head_dim).transpose(0, 1)  # (H, M+T, dh)
        ac = (q + self.u[:, None, :]) @ k.transpose(-2, -1)                           # (B, H, T, M+T)
        bd = rel_shift((q + self.v[:, None, :]) @ r.transpose(-2, -1))                 # (B, H, T, M+T)
        return (ac + bd) / math.sqrt(self.head_dim)

    def forward(self, h, memory, pos_emb=None):
        """h: (B, T, d), memory: (B, M, d) ((B, 0, d) for none), pos_emb: (M + T, d) or None
        -> (B, T, d)."""
        context = torch.cat([memory, h], dim=1)                     # (B, M+T, d)
        M, T = memory.shape[1], h.shape[1]
        k, v = self.kv_net(context).chunk(2, dim=-1)                # one projection for keys and values
        scores = self._scores(h, self._heads(k), pos_emb)
        scores = scores.masked_fill(~memory_mask(T, M, h.device), float("-inf"))
        out = F.softmax(scores, dim=-1) @ self._heads(v)            # (B, H, T, dh)
        return self.out(out.transpose(1, 2).reshape(h.shape))


class XLLayer(nn.Module):
    """Pre-LN block: h + attention(LN h over LN [memory; h]), then h + FFN(LN h)."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = RelativeMultiHeadAttention(d_model, n_heads)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, h, memory, pos_emb=None):
        h = h + self.attn(self.ln_1(h), self.ln_1(memory), pos_emb)
        return h + self.ff(self.ln_2(h))


# ------------------------------------------------------------ the language model

@dataclass
class TransformerXLConfig:
    vocab_size: int
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 256
    mem_len: int = 16             # 0: a vanilla Transformer LM (each segment on its own)
    positions: str = "relative"   # or "absolute" / "absolute, counting": see POSITIONS

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_heads", "d_ff"):
            require_positive_int(name, getattr(self, name))
        for name in ("n_layers", "mem_len"):
            require_int(name, getattr(self, name), minimum=0)
        require_divisible("d_model", self.d_model, "n_heads", self.n_heads)
        if self.d_model % 2:
            raise ValueError(f"d_model: expected an even number (sine/cosine pairs), got {self.d_model}")
        require_choice("positions", self.positions, POSITIONS)


class TransformerXL(nn.Module):
    """A decoder-only LM over segments, with per-layer memory.

        logits, memory = model(segment_1)            # memory: list of (B, <= mem_len, d)
        logits, memory = model(segment_2, memory)    # segment 2 attends to segment 1's states
    """

    def __init__(self, config: TransformerXLConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.layers = nn.ModuleList(XLLayer(config.d_model, config.n_heads, config.d_ff)
                                    for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size)

    def empty_memory(self, batch_size: int, device=None) -> list[torch.Tensor]:
        return [torch.zeros(batch_size, 0, self.config.d_model, device=device)
                for _ in range(self.config.n_layers)]

    def forward(self, input_ids, memory=None, position_offset: int = 0):
        """input_ids: (B, T) -> (logits (B, T, vocab_size), new memory: list of (B, M', d)).

        position_offset: the stream position of the segment's first token; only absolute positions
        that keep counting read it (positions position_offset .. position_offset + T - 1)."""
        require_token_ids("input_ids", input_ids, self.config.vocab_size)
        require_int("position_offset", position_offset, minimum=0)
        B, T = input_ids.shape
        if memory is None:
            memory = self.empty_memory(B, input_ids.device)
        if len(memory) != self.config.n_layers:           # zip would silently drop layers
            raise ValueError(f"memory: expected a list of {self.config.n_layers} tensors (one per "
                             f"layer), got {len(memory)}")
        M, d = memory[0].shape[1], self.config.d_model
        h = self.embed(input_ids)                                             # (B, T, d)
        if self.config.positions == "relative":
            pos_emb = relative_sinusoid(M + T, d, input_ids.device)           # (M+T, d)
        else:
            # "absolute" restarts at 0 in every segment: memory slot p and segment slot p look the same;
            # "absolute, counting" goes on from the previous segment: positions the training may never reach
            first = position_offset if self.config.positions == "absolute, counting" else 0
            pos_emb = None
            h = h + relative_sinusoid(first + T, d, input_ids.device).flip(0)[first:]   # rows first..first+T-1
        new_memory = []
        for layer, mem in zip(self.layers, memory):
            new_memory.append(update_memory(mem, h, self.config.mem_len))
            h = layer(h, mem, pos_emb)
        return self.head(self.ln_f(h)), new_memory
