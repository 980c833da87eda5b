import random

import pytest
import torch

from course_lib.corpus import make_documents
from course_lib.sentence_pairs import make_nsp_pairs, make_sop_pairs


def _where(docs):
    """sentence text -> set of (doc, index); an independent index of the corpus."""
    index = {}
    for d, doc in enumerate(docs):
        for i, s in enumerate(doc.sentences):
            index.setdefault(s, set()).add((d, i))
    return index


def test_sop_pairs_are_consecutive_and_labelled_by_order():
    docs = make_documents(200, seed=3)
    pairs = make_sop_pairs(docs, random.Random(0))
    expected = [(doc.sentences[i], doc.sentences[i + 1]) for doc in docs
                for i in range(len(doc.sentences) - 1)]
    assert len(pairs) == len(expected)
    for (a, b, label), (first, second) in zip(pairs, expected):
        assert label in (0, 1)
        assert (a, b) == ((first, second) if label == 1 else (second, first))
    share = sum(p[2] for p in pairs) / len(pairs)
    assert abs(share - 0.5) < 0.05, share


def test_nsp_negatives_come_from_other_documents():
    docs = make_documents(200, seed=4)
    where = _where(docs)
    pairs = make_nsp_pairs(docs, torch.Generator().manual_seed(1))
    expected = [(d, i) for d, doc in enumerate(docs) for i in range(len(doc.sentences) - 1)]
    assert len(pairs) == len(expected)
    for (a, b, label), (d, i) in zip(pairs, expected):
        assert a == docs[d].sentences[i]
        if label == 1:
            assert b == docs[d].sentences[i + 1]
        else:
            assert any(o != d for o, _ in where[b])
    share = sum(p[2] for p in pairs) / len(pairs)
    assert abs(share - 0.5) < 0.05, share


def test_deterministic_and_validated():
    docs = make_documents(20, seed=0)
    assert make_sop_pairs(docs, 5) == make_sop_pairs(docs, 5)
    assert make_nsp_pairs(docs, 5) == make_nsp_pairs(docs, 5)
    assert make_sop_pairs(docs, 5) != make_sop_pairs(docs, 6)
    with pytest.raises(ValueError, match="documents"):
        make_nsp_pairs(docs[:1], 0)
    with pytest.raises(ValueError, match="generator"):
        make_sop_pairs(docs, "seed")
