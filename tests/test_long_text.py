"""course_lib.long_text against Hugging Face's BertTokenizerFast on MiniLM's real vocabulary and
real text (Python's pydoc_data topics): overflowing windows for many (max_length, stride), head
and tail truncation (truncation_side right / left), and closed forms for counts and pooling."""
from __future__ import annotations

import os
import random

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from course_lib.data.corpus import pydoc_texts  # noqa: E402
from course_lib.long_text import (pad_windows, pool_windows, sliding_windows,  # noqa: E402
                                  truncate, window_count)
from course_lib.pretrained import minilm_path  # noqa: E402

# (max_length, stride) pairs: tiny windows, stride 0, the largest legal stride (C - 1), BERT's 512
SETTINGS = [(3, 0), (4, 1), (5, 2), (8, 0), (8, 5), (16, 4), (16, 13), (32, 0), (32, 8), (33, 30),
            (64, 16), (64, 61), (100, 7), (128, 32), (256, 128), (512, 128), (512, 0)]


@pytest.fixture(scope="module")
def hf():
    from transformers import BertTokenizerFast

    return BertTokenizerFast.from_pretrained(str(minilm_path()))


@pytest.fixture(scope="module")
def texts():
    """Pieces of real text of many lengths (a few tokens to a few thousand), cut at random."""
    rng = random.Random(0)
    docs = pydoc_texts()
    out = []
    for _ in range(24):
        doc = docs[rng.randrange(len(docs))]
        n = rng.choice([5, 40, 300, 1500, 6000])
        start = rng.randrange(max(1, len(doc) - n))
        out.append(doc[start:start + n])
    return out


def test_windows_equal_hugging_face_overflowing_tokens(hf, texts):
    for text in texts:
        ids = hf(text, add_special_tokens=False)["input_ids"]
        for max_length, stride in SETTINGS:
            expected = hf(text, return_overflowing_tokens=True, stride=stride, max_length=max_length,
                          truncation=True)["input_ids"]
            got = sliding_windows(ids, max_length, stride, hf.cls_token_id, hf.sep_token_id)
            assert got == expected, (max_length, stride, len(ids))
            assert len(got) == window_count(len(ids), max_length, stride)


def test_windows_cover_every_token_with_the_stated_overlap(texts, hf):
    ids = hf(texts[3] * 5, add_special_tokens=False)["input_ids"]
    for max_length, stride in [(10, 3), (64, 16), (64, 0)]:
        windows = sliding_windows(ids, max_length, stride, 101, 102)
        bodies = [w[1:-1] for w in windows]
        step = max_length - 2 - stride
        for a, b in zip(bodies, bodies[1:]):
            assert a[step:] == b[:stride]                  # neighbours share exactly `stride` tokens
        rebuilt = bodies[0] + [t for b in bodies[1:] for t in b[stride:]]
        assert rebuilt == ids


def test_head_and_tail_equal_hugging_face_truncation_sides(hf, texts):
    for text in texts:
        ids = hf(text, add_special_tokens=False)["input_ids"]
        for max_length in (3, 16, 64, 512):
            hf.truncation_side = "right"
            head = hf(text, max_length=max_length, truncation=True)["input_ids"]
            hf.truncation_side = "left"
            tail = hf(text, max_length=max_length, truncation=True)["input_ids"]
            hf.truncation_side = "right"
            assert truncate(ids, max_length, "head", hf.cls_token_id, hf.sep_token_id) == head
            assert truncate(ids, max_length, "tail", hf.cls_token_id, hf.sep_token_id) == tail
            # head+tail = the head of a (h + 2)-window joined to the tail of a (C - h + 2)-window
            C = max_length - 2
            for h in (0, C // 4, C):
                got = truncate(ids, max_length, "head+tail", 101, 102, head_tokens=h)
                if len(ids) <= C:
                    assert got == [101] + ids + [102]
                    continue
                hf.truncation_side = "right"
                first = hf(text, max_length=h + 2, truncation=True)["input_ids"][1:-1] if h else []
                hf.truncation_side = "left"
                last = hf(text, max_length=C - h + 2, truncation=True)["input_ids"][1:-1] if h < C else []
                hf.truncation_side = "right"
                assert got == [101] + first + last + [102]


def test_head_tail_default_is_sun_et_al_split():
    ids = list(range(1000, 3000))
    out = truncate(ids, 512, "head+tail", 101, 102)
    assert out[1:129] == ids[:128] and out[129:-1] == ids[-382:] and len(out) == 512


def test_window_count_closed_form_and_edges():
    assert sliding_windows([], 8, 2, 1, 2) == [[1, 2]]
    assert sliding_windows([5] * 6, 8, 2, 1, 2) == [[1] + [5] * 6 + [2]]     # exactly C tokens: one window
    assert len(sliding_windows(list(range(7)), 8, 2, 101, 102)) == 2
    for n in range(0, 60):
        for L, S in [(5, 0), (5, 2), (12, 4)]:
            assert window_count(n, L, S) == len(sliding_windows(list(range(n)), L, S, 101, 102))


def test_pool_windows():
    logits = torch.tensor([[1.0, -2.0], [3.0, 0.5], [-1.0, 4.0]])
    assert torch.equal(pool_windows(logits, "mean"), torch.tensor([1.0, 2.5 / 3]))
    assert torch.equal(pool_windows(logits, "max"), torch.tensor([3.0, 4.0]))


def test_pad_windows():
    ids, mask = pad_windows([[1, 5, 2], [1, 2]], pad_id=0)
    assert ids.tolist() == [[1, 5, 2], [1, 2, 0]] and mask.tolist() == [[1, 1, 1], [1, 1, 0]]


@pytest.mark.parametrize("call, name", [
    (lambda: sliding_windows([1, 2, 3], 10, 8, 1, 2), "stride"),
    (lambda: sliding_windows([1, 2, 3], 10, -1, 1, 2), "stride"),
    (lambda: sliding_windows([1, 2, 3], 2, 0, 1, 2), "max_length"),
    (lambda: sliding_windows([1, 2, 3], 10.0, 0, 1, 2), "max_length"),
    (lambda: sliding_windows([1, 2, 1], 10, 2, 1, 2), "ids"),          # [CLS] already in the document
    (lambda: sliding_windows([1, 2], 10, 2, None, 2), "cls_id"),
    (lambda: truncate([5, 6], 10, "middle", 1, 2), "strategy"),
    (lambda: truncate([5, 6], 10, "head+tail", 1, 2, head_tokens=9), "head_tokens"),
    (lambda: window_count(5, 10, 8), "stride"),
    (lambda: pool_windows(torch.zeros(2, 3), "median"), "how"),
])
def test_bad_inputs_name_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
