"""From token vectors to one sentence vector (lesson 19): [CLS], mean and max pooling.

BERT's encoder returns one vector per token, `hidden_states` (B, T, H). A sentence-level head
needs one vector per sentence (B, H). Three ways:

- `cls_pooling`: the vector at position 0, the [CLS] slot. It holds whatever training made
  it hold (BERT's NSP head reads it; MiniLM's sentence training did not).
- `mean_pooling`: the average of the real tokens' vectors. Padding is excluded: padded
  positions still carry vectors (they attend to the real tokens), so averaging them in would
  change a sentence's vector with the batch it was padded in.
- `max_pooling`: the element-wise maximum over the real tokens.

`attention_mask` is (B, T) with 1 (or True) for a token and 0 for padding, Hugging Face's
convention. A row with no token at all (all padding) pools to a vector of zeros in
`mean_pooling` and `max_pooling` — defined, never NaN. sentence-transformers gives the same
zeros for the mean (it divides by max(count, 1e-9)).
"""
from __future__ import annotations

import torch

from .validation import require_attention_mask, require_choice


def _check(hidden_states, attention_mask) -> torch.Tensor:
    """Check the mask and return it as a float (B, T, 1) tensor of 0/1."""
    # the models' check of an attention_mask; a float mask of 0. and 1. is fine here (no kernel
    # takes it, it only weighs the tokens)
    require_attention_mask("attention_mask", attention_mask, like=hidden_states.shape[:2],
                           like_name="hidden_states' first two dims", floats=True)
    return attention_mask.to(hidden_states.dtype).unsqueeze(-1)        # (B, T, 1)


def cls_pooling(hidden_states: torch.Tensor) -> torch.Tensor:
    """(B, T, H) -> (B, H): the vector at position 0 ([CLS])."""
    return hidden_states[:, 0]


def mean_pooling(hidden_states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(B, T, H), (B, T) -> (B, H): the mean of the vectors where attention_mask is 1.
    An all-padding row gives zeros."""
    mask = _check(hidden_states, attention_mask)                      # (B, T, 1)
    # torch.where, not hidden_states * mask: NaN * 0 is NaN, so a NaN (or inf) at a padded
    # position would leak into the sentence's mean. max_pooling masks the same way.
    total = torch.where(mask.bool(), hidden_states, 0.0).sum(dim=1)    # (B, H)
    count = mask.sum(dim=1).clamp(min=1.0)                             # (B, 1); 0 tokens -> sum 0
    return total / count


def max_pooling(hidden_states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(B, T, H), (B, T) -> (B, H): the element-wise max over positions where attention_mask
    is 1. An all-padding row gives zeros."""
    mask = _check(hidden_states, attention_mask).bool()                # (B, T, 1)
    filled = hidden_states.masked_fill(~mask, float("-inf"))
    out = filled.max(dim=1).values                                     # (B, H)
    empty = ~mask.any(dim=1)                                           # (B, 1)
    return out.masked_fill(empty, 0.0)


POOLINGS = {"cls": lambda h, m: cls_pooling(h), "mean": mean_pooling, "max": max_pooling}


def pool(hidden_states: torch.Tensor, attention_mask: torch.Tensor, mode: str) -> torch.Tensor:
    """`mode` in ("cls", "mean", "max")."""
    require_choice("mode", mode, POOLINGS)
    return POOLINGS[mode](hidden_states, attention_mask)
