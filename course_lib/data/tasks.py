"""Seeded synthetic sequence tasks (lessons 02, 03, 05, 09, 11, 12).

Token conventions (shared by every task):

    PAD = 0   padding (and what greedy decoding writes after EOS)
    BOS = 1   first decoder input
    EOS = 2   end of the target
    SEP = 3   separator (between key-value pairs and the query; between prompt and answer)
    4 .. vocab_size-1   content tokens

Tasks (`src` holds content tokens only, `target` is what the model must output):

    copy     target = src
    reverse  target = src[::-1]
    sort     target = sorted(src)
    recall   src = k1 v1 k2 v2 ... kn vn SEP q, target = [v_i] for the k_i == q
             (keyed recall: "output the value after the matching key"). Keys are distinct
             and drawn from the lower half of the content tokens, values from the upper half,
             so a key is never mistaken for a value. `seq_len` is the number of pairs n.

Everything is drawn from the caller's `torch.Generator`, so a seed fixes the data.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..validation import is_int, require_choice, require_positive_int

PAD, BOS, EOS, SEP = 0, 1, 2, 3
N_SPECIAL = 4
TASKS = ("copy", "reverse", "sort", "recall")


@dataclass
class SeqBatch:
    """One batch of a sequence-to-sequence task (all LongTensors).

    src     (B, S)     encoder input
    target  (B, T)     the answer
    tgt_in  (B, T + 1) BOS + target        (decoder input, teacher forcing)
    tgt_out (B, T + 1) target + EOS        (what each decoder position must predict)
    """
    src: torch.Tensor
    target: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor

    def to(self, device) -> "SeqBatch":
        return SeqBatch(*(t.to(device) for t in (self.src, self.target, self.tgt_in, self.tgt_out)))


def _content(batch_size, seq_len, low, high, generator):
    return torch.randint(low, high, (batch_size, seq_len), generator=generator)


def make_batch(task: str, batch_size: int, seq_len: int, vocab_size: int,
               generator: torch.Generator, device=None) -> SeqBatch:
    """A `SeqBatch` of `task` (see the module docstring); tensors end on `device`."""
    require_choice("task", task, TASKS)
    # np.int64 sizes (read from an array) go too; torch gets Python ints
    batch_size = require_positive_int("batch_size", batch_size)
    seq_len = require_positive_int("seq_len", seq_len)
    if not is_int(vocab_size) or vocab_size - N_SPECIAL < (2 if task == "recall" else 1):
        raise ValueError(f"vocab_size: must leave content tokens after the {N_SPECIAL} specials, got {vocab_size!r}")
    if task == "recall":
        src, target = _recall(batch_size, seq_len, vocab_size, generator)
    else:
        src = _content(batch_size, seq_len, N_SPECIAL, vocab_size, generator)   # (B, S)
        target = {"copy": lambda s: s.clone(),
                  "reverse": lambda s: s.flip(1),
                  "sort": lambda s: s.sort(dim=1).values}[task](src)           # (B, T)
    B = batch_size
    tgt_in = torch.cat([torch.full((B, 1), BOS), target], dim=1)
    tgt_out = torch.cat([target, torch.full((B, 1), EOS)], dim=1)
    return SeqBatch(src, target, tgt_in, tgt_out).to(device or "cpu")


def _recall(batch_size, n_pairs, vocab_size, generator):
    n_keys = (vocab_size - N_SPECIAL) // 2                  # lower half: keys
    if n_pairs > n_keys:
        raise ValueError(f"seq_len: {n_pairs} distinct keys need vocab_size >= "
                         f"{N_SPECIAL + 2 * n_pairs}, got vocab_size={vocab_size}")
    # distinct keys per row: the first n_pairs of a random permutation of the key range
    keys = torch.rand(batch_size, n_keys, generator=generator).argsort(dim=1)[:, :n_pairs]
    keys = keys + N_SPECIAL                                                     # (B, n)
    values = _content(batch_size, n_pairs, N_SPECIAL + n_keys, vocab_size, generator)  # (B, n)
    which = torch.randint(0, n_pairs, (batch_size, 1), generator=generator)    # (B, 1)
    query = keys.gather(1, which)
    pairs = torch.stack([keys, values], dim=2).reshape(batch_size, 2 * n_pairs)  # k1 v1 k2 v2 ...
    src = torch.cat([pairs, torch.full((batch_size, 1), SEP), query], dim=1)   # (B, 2n + 2)
    return src, values.gather(1, which)                                        # target (B, 1)


def as_lm_batch(batch: SeqBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """The same task for a decoder-only model: `src SEP target EOS`, predicting the next token.

    Returns input_ids (B, L) = (src, SEP, target) and labels (B, L) = the next token, with
    -100 (ignored by cross-entropy) where the next token is still part of the prompt.
    """
    B, S = batch.src.shape
    sep = batch.src.new_full((B, 1), SEP)
    full = torch.cat([batch.src, sep, batch.tgt_out], dim=1)                   # (B, S + 1 + T + 1)
    input_ids, labels = full[:, :-1], full[:, 1:].clone()
    labels[:, :S] = -100          # positions 0..S-1 would predict the prompt (src[1:], SEP)
    return input_ids, labels
