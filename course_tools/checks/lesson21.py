"""Graded checks for lesson 21: the sliding-window chunker of long documents.

The learner's `sliding_windows(ids, max_length, stride, cls_id, sep_id)` gets lists of ints and
returns a list of lists of ints; it is compared with course_lib.long_text.sliding_windows on
hidden random cases and with Hugging Face's overflowing windows on real text.
"""
import os

import torch

from course_lib.long_text import sliding_windows as reference
from ..grading import CheckFailed, exercise, expect

os.environ.setdefault("HF_HUB_OFFLINE", "1")

FORBIDS = ("course_lib.long_text:sliding_windows", "course_lib.long_text:window_count",
           "transformers:BertTokenizerFast", "transformers:AutoTokenizer", "tokenizers:Tokenizer")


def _randint(rng, low, high):
    """An int in [low, high]."""
    return int(torch.randint(low, high + 1, (1,), generator=rng))


def _as_windows(case, got):
    if not isinstance(got, (list, tuple)):
        raise CheckFailed(f"[{case}] return a list of windows (lists of ints), got {type(got).__name__}")
    out = []
    for k, w in enumerate(got):
        if isinstance(w, torch.Tensor):
            w = w.tolist()
        if not isinstance(w, (list, tuple)) or not all(isinstance(t, int) and not isinstance(t, bool)
                                                        for t in w):
            raise CheckFailed(f"[{case}] window {k} should be a list of ints, got {w!r:.80}")
        out.append(list(w))
    return out


def _compare(case, got, expected, ids, max_length, stride):
    got = _as_windows(case, got)
    C = max_length - 2
    if got == expected:
        return
    if len(got) != len(expected):
        hint = ""
        if len(got) == len(expected) + 1:
            hint = (" — one window too many: stop after the first window that reaches the end of "
                    "the document (do not add a window that only repeats the last `stride` tokens)")
        else:
            hint = (f" — the step between window starts is max_length - 2 - stride = {C - stride}; "
                    f"`stride` is the overlap, not the step")
        raise CheckFailed(f"[{case}] {len(got)} windows, expected {len(expected)}{hint}")
    for k, (g, e) in enumerate(zip(got, expected)):
        if g != e:
            start = k * (C - stride)
            if g[:1] != e[:1] or g[-1:] != e[-1:]:
                hint = " (every window starts with cls_id and ends with sep_id)"
            elif len(g) > max_length:
                hint = f" (at most max_length = {max_length} ids, [CLS] and [SEP] included)"
            else:
                hint = (f" (window {k} holds ids[{start}:{start + C}]: it starts at k * (max_length - 2 "
                        f"- stride) = {start})")
            raise CheckFailed(f"[{case}] window {k} differs{hint}: got {g[:8]}...{g[-4:]} "
                              f"({len(g)} ids), expected {e[:8]}...{e[-4:]} ({len(e)} ids)")


def _random_case(rng, case):
    max_length = _randint(rng, 3, 80)
    C = max_length - 2
    stride = _randint(rng, 0, C - 1)
    kind = case % 4
    if kind == 0:
        n = _randint(rng, 0, 6 * C)
    elif kind == 1:
        n = C + _randint(rng, -1, 1)             # around exactly one window
    elif kind == 2:
        step = C - stride                       # ends exactly on a window boundary, or one past
        n = C + step * _randint(rng, 1, 5) + _randint(rng, 0, 1)
    else:
        n = _randint(rng, 0, 3)
    n = max(n, 0)
    ids = torch.randint(5, 30000, (n,), generator=rng).tolist()
    cls_id, sep_id = _randint(rng, 100, 110), _randint(rng, 111, 120)
    return ids, max_length, stride, cls_id, sep_id


@exercise("21.windows-random", points=3, uses="sliding_windows", forbids=FORBIDS)
def check_random(fn, rng):
    """Windows equal the reference on hidden random documents, sizes and strides."""
    for case in range(40):
        ids, max_length, stride, cls_id, sep_id = _random_case(rng, case)
        name = (f"case {case}: {len(ids)} ids, max_length={max_length}, stride={stride}, "
                f"cls_id={cls_id}, sep_id={sep_id}")
        before = list(ids)
        got = fn(ids, max_length, stride, cls_id, sep_id)
        expect(ids == before, f"[{name}] ids was modified")
        _compare(name, got, reference(ids, max_length, stride, cls_id, sep_id), ids, max_length, stride)


@exercise("21.windows-hugging-face", points=2, uses="sliding_windows", forbids=FORBIDS)
def check_hugging_face(fn, rng):
    """Windows equal Hugging Face's return_overflowing_tokens windows of MiniLM's tokenizer on real text."""
    from transformers import BertTokenizerFast

    from course_lib.corpus import pydoc_texts
    from course_lib.pretrained import minilm_path

    tokenizer = BertTokenizerFast.from_pretrained(str(minilm_path()))
    docs = pydoc_texts()
    for case in range(8):
        doc = docs[_randint(rng, 0, len(docs) - 1)]
        n_chars = _randint(rng, 200, 3000)
        start = _randint(rng, 0, max(0, len(doc) - n_chars))
        text = doc[start:start + n_chars]
        max_length = [16, 32, 64, 128, 256, 512, 24, 100][case]
        stride = _randint(rng, 0, max_length - 3)
        expected = tokenizer(text, return_overflowing_tokens=True, stride=stride, max_length=max_length,
                             truncation=True)["input_ids"]
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        name = (f"case {case}: {len(ids)} tokens of Python's docs, max_length={max_length}, "
                f"stride={stride} (Hugging Face BertTokenizerFast, return_overflowing_tokens=True)")
        got = fn(ids, max_length, stride, tokenizer.cls_token_id, tokenizer.sep_token_id)
        _compare(name, got, expected, ids, max_length, stride)


@exercise("21.windows-bad-stride", points=1, uses="sliding_windows", forbids=FORBIDS)
def check_bad_stride(fn, rng):
    """stride >= max_length - 2 raises ValueError naming stride (the step would be 0 or negative)."""
    for case in range(3):
        max_length = _randint(rng, 4, 60)
        stride = max_length - 2 + case
        ids = torch.randint(5, 30000, (3 * max_length,), generator=rng).tolist()
        name = f"case {case}: max_length={max_length}, stride={stride}"
        try:
            got = fn(ids, max_length, stride, 101, 102)
        except ValueError as error:
            expect("stride" in str(error), f"[{name}] the ValueError should name `stride`; got {error!r}")
        else:
            raise CheckFailed(f"[{name}] expected a ValueError (the step max_length - 2 - stride would be "
                              f"{max_length - 2 - stride}: no progress), got "
                              f"{type(got).__name__} of length {len(got) if hasattr(got, '__len__') else '?'}")
