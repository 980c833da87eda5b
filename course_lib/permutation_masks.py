"""XLNet's permutation language modelling: the two attention masks (Yang et al. 2019) (lesson 23).

XLNet predicts the tokens of a sequence autoregressively, but in a random *factorisation
order* z (a permutation of the positions) instead of left to right. The tokens stay where they
are (positions unchanged); only the masks change. Position i, at rank r(i) in z, may use the
tokens that come before it in z, from both sides of i in the sentence — bidirectional context
without a [MASK] token.

One stream cannot do this: to predict token x_i the model must know *where* it predicts (i's
position) but not *what* is there (x_i). Hence two streams over the same weights:

- content stream h: position i sees positions j with r(j) <= r(i) — itself included. It is
  what later positions read;
- query stream g: position i sees positions j with r(j) < r(i) — never its own content. Its
  input at layer 0 is a learned vector w (plus i's position); its output predicts x_i.

Both streams read keys and values from the *content* stream of the layer below.
Masks are boolean (T, T), True = may attend (row = query position, column = key position),
the convention of `course_lib.attention.scaled_dot_product_attention`.
"""
from __future__ import annotations

import torch



def ranks(order: torch.Tensor) -> torch.Tensor:
    """r with r[order[t]] = t: the step at which each position is predicted."""
    if order.dtype != torch.long:
        order = order.long()        # int32, int16, uint8: as good a permutation (index_put needs long)
    T = order.numel()
    if not torch.equal(order.sort().values.cpu(), torch.arange(T)):     # (a repeat would go unseen)
        raise ValueError(f"order: expected a permutation of 0..{T - 1}, got {order.tolist()}")
    r = torch.empty_like(order)
    r[order] = torch.arange(T, device=order.device)
    return r


def two_stream_masks(order: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(content_mask, query_mask), both (T, T) bool, for the factorisation order `order` (T,).

    content_mask[i, j] = r(j) <= r(i); query_mask[i, j] = r(j) < r(i). With order = 0..T-1
    the content mask is GPT's causal mask and the query mask is the same without the diagonal.
    The first position in the order has an empty query row: it is predicted from nothing but
    its position (XLNet predicts only the last tokens of each order, which always see some).
    """
    r = ranks(order)
    content = r[None, :] <= r[:, None]                 # (T, T): row i, column j
    query = r[None, :] < r[:, None]
    return content, query
