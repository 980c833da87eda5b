"""Graded checks for lesson 14: several BERT pairs packed into one row - ids, segment ids, positions
that restart per pair, and the block-diagonal attention mask. References written here."""
import random

import torch

from ..grading import CheckFailed, exercise, expect, expect_shape, randint

_SHORTCUTS = ("course_lib.bert:pack_pair", "course_lib.bert:BertEmbeddings", "course_lib.bert:BertModel",
              "course_lib.transformer:padding_mask")


def pack_reference(pairs, cls_id=101, sep_id=102):
    ids, types, positions, examples = [], [], [], []
    for index, (a, b) in enumerate(pairs):
        part = [cls_id, *a, sep_id] + ([] if b is None else [*b, sep_id])
        n_first = len(a) + 2
        ids += part
        types += [0] * n_first + [1] * (len(part) - n_first)
        positions += list(range(len(part)))
        examples += [index] * len(part)
    return ids, types, positions, examples


def mask_reference(example_ids):
    return ((example_ids[:, :, None] == example_ids[:, None, :]) & (example_ids >= 0)[:, None, :])[:, None]


def _python_rng(rng):
    return random.Random(randint(rng, 0, 2**62))


def _random_pairs(r, n_pairs):
    pairs = []
    for _ in range(n_pairs):
        a = [r.randint(1000, 2000) for _ in range(r.randint(0, 5))]
        kind = r.random()
        b = None if kind < 0.3 else [] if kind < 0.4 else [r.randint(1000, 2000) for _ in range(r.randint(1, 5))]
        pairs.append((a, b))
    return pairs


_NAMES = ("input_ids", "token_type_ids", "position_ids", "example_ids")
_HINTS = {"token_type_ids": "per pair: 0 for [CLS] A [SEP], 1 for B [SEP], and 0 again from the next pair's [CLS]",
          "position_ids": "positions restart at 0 at every pair's [CLS] (each pair gets the positions it would have alone)",
          "example_ids": "the index of the pair each token belongs to, 0 for the first pair",
          "input_ids": "[CLS] A [SEP] B [SEP] per pair ([CLS] A [SEP] when B is None; an empty B still gets its [SEP])"}


def _check_pack(fn, pairs, case, cls_id=101, sep_id=102):
    kwargs = {} if (cls_id, sep_id) == (101, 102) else {"cls_id": cls_id, "sep_id": sep_id}
    got = fn([(list(a), None if b is None else list(b)) for a, b in pairs], **kwargs)
    if not (isinstance(got, (tuple, list)) and len(got) == 4):
        raise CheckFailed(f"[{case}] return four tensors (input_ids, token_type_ids, position_ids, example_ids), "
                          f"got {type(got).__name__}")
    for name, value, want in zip(_NAMES, got, pack_reference(pairs, cls_id, sep_id)):
        expect(isinstance(value, torch.Tensor), f"[{case}] {name} should be a torch.Tensor, got {type(value).__name__}")
        expect(value.dtype == torch.long, f"[{case}] {name} has dtype {value.dtype}, expected torch.long")
        if value.dim() != 1 or value.tolist() != want:
            raise CheckFailed(f"[{case}] pairs {pairs}: {name} {value.tolist()}, expected {want} - {_HINTS[name]}")


@exercise("14.pack-pairs", points=2, uses="pack_pairs", forbids=_SHORTCUTS)
def check_pack(fn, rng):
    """Random packs of 1 to 6 pairs: ids, per-pair segment ids, restarting positions, pair indices."""
    _check_pack(fn, [([7, 8], [9]), ([5], None)], "worked example")
    _check_pack(fn, [([3], [4]), ([5, 6], [7])], "two full pairs (the second starts at segment 0, position 0)")
    _check_pack(fn, [([], [])], "one pair of empty segments")
    _check_pack(fn, [([], None)], "one empty single segment")
    r = _python_rng(rng)
    for case in range(12):
        special = (101, 102) if case % 3 else (r.randint(0, 5), r.randint(6, 9))
        _check_pack(fn, _random_pairs(r, r.randint(1, 6)), f"random pack {case}", *special)


def _mask_hint(got, example_ids):
    if torch.equal(got, ~mask_reference(example_ids)):
        return " - the mask is inverted: in this course True means *may attend* (PyTorch's key_padding_mask means the opposite)"
    ids = example_ids[:, None, :, None], example_ids[:, None, None, :]
    pad_q, pad_k = ids[0] < 0, ids[1] < 0
    cross = (ids[0] != ids[1]) & ~pad_q & ~pad_k
    if (got & cross).any():
        return " - tokens of different pairs attend to each other: the mask must be block-diagonal (same pair only)"
    if (got & (pad_q | pad_k)).any():
        return " - padding (example id -1) is attended to, or attends: padding keys are never visible, a padding query sees nothing"
    return ""


def _check_mask(fn, example_ids, case):
    got = fn(example_ids.clone())
    expected = mask_reference(example_ids)
    expect_shape(case, got, expected.shape, "the mask")
    expect(got.dtype == torch.bool, f"[{case}] the mask has dtype {got.dtype}, expected torch.bool (True = may attend)")
    if not torch.equal(got, expected):
        b, _, i, j = (got != expected).nonzero()[0].tolist()
        raise CheckFailed(f"[{case}] example_ids {example_ids.tolist() if example_ids.numel() <= 40 else '...'}: "
                          f"mask[{b}, 0, {i}, {j}] is {bool(got[b, 0, i, j])}, expected {bool(expected[b, 0, i, j])} "
                          f"(query {i} in pair {int(example_ids[b, i])}, key {j} in pair {int(example_ids[b, j])})"
                          + _mask_hint(got, example_ids))


def _packed_rows(r, B, T):
    rows = []
    for _ in range(B):
        row = []
        for index in range(r.randint(1, 5)):
            row += [index] * r.randint(1, 5)
        row = row[:T] + [-1] * max(0, T - len(row))
        rows.append(row)
    return torch.tensor(rows, dtype=torch.long)


@exercise("14.packed-mask", points=2, uses="packed_attention_mask", forbids=_SHORTCUTS)
def check_mask(fn, rng):
    """Block-diagonal (B, 1, T, T) mask: same pair only, padding (-1) never attended, padding queries see nothing."""
    _check_mask(fn, torch.tensor([[0, 0, 1, -1]]), "worked example")
    _check_mask(fn, torch.tensor([[0, 0, 1, 1, 1], [0, 1, 1, 2, 2]]), "pairs side by side, no padding")
    _check_mask(fn, torch.tensor([[0, 0, 0, -1, -1], [-1, -1, -1, -1, -1]]), "an all-padding row")
    _check_mask(fn, torch.tensor([[0]]), "T = 1")
    r = _python_rng(rng)
    for case in range(10):
        B, T = r.randint(1, 4), r.randint(2, 20)
        _check_mask(fn, _packed_rows(r, B, T), f"random batch {case}: B={B}, T={T}")
