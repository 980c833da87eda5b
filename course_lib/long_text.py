"""Documents longer than the model's limit (lesson 21): truncation and sliding windows.

A BERT sees at most `max_length` positions (512 for BERT-base), two of them spent on [CLS] and
[SEP], so C = max_length - 2 content tokens fit. The ways to read a longer document:

    head        [CLS] ids[:C] [SEP]                       keeps the beginning
    tail        [CLS] ids[-C:] [SEP]                      keeps the end
    head+tail   [CLS] ids[:h] ids[-(C-h):] [SEP]          Sun et al. 2019: h = 128 of 510 on IMDb
    windows     [CLS] ids[k(C-S) : k(C-S)+C] [SEP], k = 0, 1, ...   every token, S shared by neighbours

`sliding_windows` is exactly Hugging Face's `tokenizer(text, return_overflowing_tokens=True,
stride=S, max_length=L, truncation=True)` for one sequence: `stride` counts the tokens a window
shares with the next one (not the step, which is C - S), and the windows stop after the first one
that reaches the end of the document. The windows' predictions are pooled back into one per
document (`pool_windows`: mean or max of the logits).

All functions take plain lists of token ids (no [CLS]/[SEP]) and return plain lists.
"""
from __future__ import annotations

import math
import operator

import torch

from .validation import is_int, require_choice, require_int

STRATEGIES = ("head", "tail", "head+tail")


def _as_ids(ids) -> list[int]:
    """A list of int ids from a list, a numpy array or a 1-D tensor (a float is refused, not cut)."""
    return [operator.index(t) for t in (ids.tolist() if isinstance(ids, torch.Tensor) else ids)]


def _require_no_specials(ids: list[int], cls_id: int, sep_id: int) -> None:
    """The document's own tokens: [CLS] and [SEP] are added here, once per window; ids that
    already carry them (a tokenizer's encode output) would give [CLS, CLS, ...]."""
    for special, name in ((cls_id, "cls_id"), (sep_id, "sep_id")):
        require_int(name, special, minimum=0)              # None would end up in every window
        if special in ids:
            raise ValueError(f"ids: expected the document's tokens without [CLS]/[SEP] "
                             f"(they are added to every window), got {name}={special} at index "
                             f"{ids.index(special)}")


def content_length(max_length: int) -> int:
    """C = max_length - 2: the document tokens that fit beside [CLS] and [SEP]."""
    return require_int("max_length", max_length, minimum=3) - 2


def _step(max_length: int, stride: int) -> int:
    """C - S, how far each window moves: S < C, or the windows would never reach the end."""
    C = content_length(max_length)
    if not is_int(stride) or not 0 <= stride < C:
        raise ValueError(f"stride: expected an int in [0, max_length - 2 = {C}) (the tokens neighbouring "
                         f"windows share; the step is max_length - 2 - stride), got {stride!r}")
    return C - stride


def truncate(ids, max_length: int, strategy: str, cls_id: int, sep_id: int,
             head_tokens: int | None = None) -> list[int]:
    """One window of at most `max_length` ids: [CLS] + kept tokens + [SEP].

    strategy: "head" (the first C tokens), "tail" (the last C) or "head+tail" (the first
    `head_tokens` and the last C - head_tokens; default a quarter of C, Sun et al.'s 128 of 510).
    A document that fits is returned whole, whatever the strategy.
    """
    ids = _as_ids(ids)
    C = content_length(max_length)
    _require_no_specials(ids, cls_id, sep_id)
    require_choice("strategy", strategy, STRATEGIES)
    head_tokens = round(C * 128 / 510) if head_tokens is None else head_tokens
    if not is_int(head_tokens) or not 0 <= head_tokens <= C:
        raise ValueError(f"head_tokens: expected an int in [0, max_length - 2 = {C}], got {head_tokens!r}")
    if len(ids) <= C:
        kept = ids
    elif strategy == "head":
        kept = ids[:C]
    elif strategy == "tail":
        kept = ids[len(ids) - C:]
    else:
        kept = ids[:head_tokens] + ids[len(ids) - (C - head_tokens):]
    return [cls_id] + kept + [sep_id]


def sliding_windows(ids, max_length: int, stride: int, cls_id: int, sep_id: int) -> list[list[int]]:
    """Hugging Face's overflowing windows: window k = [CLS] + ids[k(C-S) : k(C-S)+C] + [SEP].

    C = max_length - 2; `stride` S = tokens shared by neighbouring windows, 0 <= S < C. The last
    window is the first that reaches the end of ids (it may be shorter than max_length); an
    empty document gives one window [CLS, SEP].
    """
    ids = _as_ids(ids)
    C, step = content_length(max_length), _step(max_length, stride)
    _require_no_specials(ids, cls_id, sep_id)
    windows, start = [], 0
    while True:
        windows.append([cls_id] + ids[start:start + C] + [sep_id])
        if start + C >= len(ids):
            return windows
        start += step


def window_count(n_tokens: int, max_length: int, stride: int) -> int:
    """How many windows `sliding_windows` makes of n_tokens: 1 + ceil(max(0, n - C) / (C - S))."""
    return 1 + math.ceil(max(0, n_tokens - content_length(max_length)) / _step(max_length, stride))


def pool_windows(logits, how: str = "mean") -> torch.Tensor:
    """One prediction from a document's windows: (n_windows, n_classes) -> (n_classes,).

    "mean" averages the windows' logits; "max" takes each class's largest logit over windows
    (the class whose best window is most confident wins).
    """
    if how == "mean":
        return logits.mean(0)
    if how == "max":
        return logits.max(0).values
    raise ValueError(f"how: expected 'mean' or 'max', got {how!r}")


def pad_windows(windows, pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) of shape (n_windows, longest) from lists of ids, right-padded."""
    longest = max(len(w) for w in windows)
    input_ids = torch.full((len(windows), longest), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(windows), longest), dtype=torch.long)
    for r, w in enumerate(windows):
        input_ids[r, :len(w)] = torch.tensor(_as_ids(w), dtype=torch.long)
        attention_mask[r, :len(w)] = 1
    return input_ids, attention_mask
