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
import numbers

import torch

from .validation import require_floating, require_int, require_rank

STRATEGIES = ("head", "tail", "head+tail")


def _require_ids(name: str, ids) -> list[int]:
    if isinstance(ids, torch.Tensor):
        if ids.dim() != 1:
            raise ValueError(f"{name}: expected a 1-D list of token ids, got shape {tuple(ids.shape)}")
        ids = ids.tolist()
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
        raise ValueError(f"{name}: expected a list of token ids, got {type(ids).__name__}")
    out = list(ids)
    for i, t in enumerate(out):
        if isinstance(t, bool) or not isinstance(t, numbers.Integral) or t < 0:
            raise ValueError(f"{name}: expected non-negative int token ids, got {t!r} at index {i}")
    return [int(t) for t in out]


def _require_no_specials(ids: list[int], cls_id: int, sep_id: int) -> None:
    """The document's own tokens: [CLS] and [SEP] are added here, once per window; ids that
    already carry them (a tokenizer's encode output) would give [CLS, CLS, ...]."""
    for special, name in ((cls_id, "cls_id"), (sep_id, "sep_id")):
        if special in ids:
            raise ValueError(f"ids: expected the document's tokens without [CLS]/[SEP] "
                             f"(they are added to every window), got {name}={special} at index "
                             f"{ids.index(special)}")


def content_length(max_length: int) -> int:
    """C = max_length - 2: the document tokens that fit beside [CLS] and [SEP]."""
    return require_int("max_length", max_length, minimum=3) - 2


def truncate(ids, max_length: int, strategy: str, cls_id: int, sep_id: int,
             head_tokens: int | None = None) -> list[int]:
    """One window of at most `max_length` ids: [CLS] + kept tokens + [SEP].

    strategy: "head" (the first C tokens), "tail" (the last C) or "head+tail" (the first
    `head_tokens` and the last C - head_tokens; default a quarter of C, Sun et al.'s 128 of 510).
    A document that fits is returned whole, whatever the strategy.
    """
    ids = _require_ids("ids", ids)
    C = content_length(max_length)
    cls_id, sep_id = require_int("cls_id", cls_id, minimum=0), require_int("sep_id", sep_id, minimum=0)
    _require_no_specials(ids, cls_id, sep_id)
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy: expected one of {STRATEGIES}, got {strategy!r}")
    if head_tokens is None:
        head_tokens = round(C * 128 / 510)
    head_tokens = require_int("head_tokens", head_tokens, minimum=0)
    if head_tokens > C:
        raise ValueError(f"head_tokens: expected at most max_length - 2 = {C}, got {head_tokens}")
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
    ids = _require_ids("ids", ids)
    C = content_length(max_length)
    stride = require_int("stride", stride, minimum=0)
    if stride >= C:
        raise ValueError(f"stride: expected < max_length - 2 = {C} (the tokens neighbouring "
                         f"windows share; the step is max_length - 2 - stride), got {stride}")
    cls_id, sep_id = require_int("cls_id", cls_id, minimum=0), require_int("sep_id", sep_id, minimum=0)
    _require_no_specials(ids, cls_id, sep_id)
    step = C - stride
    windows, start = [], 0
    while True:
        windows.append([cls_id] + ids[start:start + C] + [sep_id])
        if start + C >= len(ids):
            return windows
        start += step


def window_count(n_tokens: int, max_length: int, stride: int) -> int:
    """How many windows `sliding_windows` makes of n_tokens: 1 + ceil(max(0, n - C) / (C - S))."""
    n_tokens = require_int("n_tokens", n_tokens, minimum=0)
    C = content_length(max_length)
    stride = require_int("stride", stride, minimum=0)
    if stride >= C:
        raise ValueError(f"stride: expected < max_length - 2 = {C}, got {stride}")
    return 1 + math.ceil(max(0, n_tokens - C) / (C - stride))


def pool_windows(logits, how: str = "mean") -> torch.Tensor:
    """One prediction from a document's windows: (n_windows, n_classes) -> (n_classes,).

    "mean" averages the windows' logits; "max" takes each class's largest logit over windows
    (the class whose best window is most confident wins).
    """
    require_rank("logits", logits, 2, layout="(n_windows, n_classes)")
    if logits.shape[0] == 0:
        raise ValueError("logits: expected at least one window, got shape (0, ...)")
    require_floating("logits", logits)      # mean() of integer logits has no dtype to return
    if how == "mean":
        return logits.mean(0)
    if how == "max":
        return logits.max(0).values
    raise ValueError(f"how: expected 'mean' or 'max', got {how!r}")


def pad_windows(windows, pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) of shape (n_windows, longest) from lists of ids, right-padded."""
    pad_id = require_int("pad_id", pad_id, minimum=0)
    if not windows:
        raise ValueError("windows: expected at least one window, got none")
    if not all(isinstance(w, (list, tuple)) for w in windows):
        raise ValueError(f"windows: expected a list of windows, each a list of ids, got an element "
                         f"of type {next(type(w).__name__ for w in windows if not isinstance(w, (list, tuple)))}")
    longest = max(len(w) for w in windows)
    input_ids = torch.full((len(windows), longest), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(windows), longest), dtype=torch.long)
    for r, w in enumerate(windows):
        input_ids[r, :len(w)] = torch.tensor(_require_ids(f"windows[{r}]", w), dtype=torch.long)
        attention_mask[r, :len(w)] = 1
    return input_ids, attention_mask
