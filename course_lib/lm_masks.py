"""The attention masks of GPT, ELMo and BERT: what "bidirectional" means (lesson 20).

One Transformer body becomes each of the three model families by its attention mask alone:

    "forward"        GPT, and ELMo's forward LM: query i attends to keys 0..i (lower triangle)
    "backward"       ELMo's backward LM:         query i attends to keys i..T-1 (upper triangle)
    "bidirectional"  BERT:                       query i attends to every key

ELMo runs a forward and a backward body side by side and concatenates their states at each
position ("shallow" bidirectionality: the two directions meet only in the head on top); BERT
lets every layer mix both sides ("deep" bidirectionality).

Masks are boolean, True = may attend, the convention of `course_lib.attention`. With an
`attention_mask` (1 = token, 0 = padding) padding keys are never attended; a query row whose
every allowed key is padding (a padding query of the backward mask) stays all False, and
`course_lib.attention` gives such a row a zero output instead of NaN.
"""
from __future__ import annotations

import torch

from .transformer import padding_mask
from .validation import require_attention_mask, require_choice

DIRECTIONS = ("forward", "backward", "bidirectional")


def direction_mask(T: int, direction: str, device=None) -> torch.Tensor:
    """(T, T) bool: entry [i, j] is True when query i may attend to key j."""
    require_choice("direction", direction, DIRECTIONS)     # a typo would read as "bidirectional"
    full = torch.ones(T, T, dtype=torch.bool, device=device)
    if direction == "forward":
        return full.tril()          # j <= i
    if direction == "backward":
        return full.triu()          # j >= i
    return full


def lm_attention_mask(attention_mask: torch.Tensor, direction: str) -> torch.Tensor:
    """(B, T) attention_mask (1/True = token, 0/False = padding) -> (B, 1, T, T) bool.

    The direction's (T, T) pattern AND "the key is a real token" (`course_lib.transformer.padding_mask`);
    the head axis has size 1 and broadcasts over heads.
    """
    require_attention_mask("attention_mask", attention_mask)                  # as every model does
    keys = padding_mask(attention_mask)                                       # (B, 1, 1, T)
    pattern = direction_mask(attention_mask.shape[1], direction, device=attention_mask.device)  # (T, T)
    return pattern[None, None] & keys                                         # (B, 1, T, T)



def elmo_predictive_states(forward_states: torch.Tensor, backward_states: torch.Tensor) -> torch.Tensor:
    """ELMo's biLM prediction of token i without seeing it: [forward[i-1] ; backward[i+1]].

    forward_states, backward_states: (B, T, D) outputs of a forward- and a backward-masked body
    (each state at i has seen token i itself). Returns (B, T, 2D); where the neighbour lies
    outside the sequence (i = 0 for the forward half, i = T-1 for the backward half) the half is 0.
    """
    zero = forward_states.new_zeros(forward_states[:, :1].shape)                     # (B, 1, D)
    left = torch.cat([zero, forward_states[:, :-1]], dim=1)          # row i holds forward[i-1]
    right = torch.cat([backward_states[:, 1:], zero], dim=1)         # row i holds backward[i+1]
    return torch.cat([left, right], dim=-1)                                          # (B, T, 2D)
