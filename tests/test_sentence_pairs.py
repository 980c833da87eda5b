"""course_lib.sentence_pairs: the one NSP/SOP sampler (Hugging Face labels: 0 = B continues A)."""
import random

import pytest
import torch

from course_lib.data.corpus import Document, make_documents, pydoc_texts
from course_lib.sentence_pairs import (IS_NEXT, NOT_NEXT, consecutive_pairs, make_nsp_pairs,
                                       make_pair, make_pairs, make_sop_pairs, sample_pair,
                                       text_documents)


def _where(docs):
    """sentence text -> set of (doc, index); an independent index of the corpus."""
    index = {}
    for d, doc in enumerate(docs):
        for i, s in enumerate(doc.sentences):
            index.setdefault(s, set()).add((d, i))
    return index


def _positives(docs):
    """Independently: (d, i) with sentences i and i+1 in one episode."""
    out = []
    for d, doc in enumerate(docs):
        for i in range(len(doc.sentences) - 1):
            if doc.episodes[i] == doc.episodes[i + 1]:
                out.append((d, i))
    return out


def test_hugging_face_convention():
    assert (IS_NEXT, NOT_NEXT) == (0, 1)


def test_positives_stay_inside_one_episode():
    docs = make_documents(200, seed=3)
    assert consecutive_pairs(docs) == _positives(docs)
    # episodes do break documents: fewer positives than consecutive sentence pairs
    assert len(consecutive_pairs(docs)) < sum(len(d.sentences) - 1 for d in docs)
    # a plain list of sentences is one episode
    assert consecutive_pairs([["a b", "c d", "e f"], ["g h"]]) == [(0, 0), (0, 1)]


def test_sop_pairs_are_consecutive_and_labelled_by_order():
    docs = make_documents(200, seed=3)
    pairs = make_sop_pairs(docs, random.Random(0))
    expected = [(docs[d].sentences[i], docs[d].sentences[i + 1]) for d, i in _positives(docs)]
    assert len(pairs) == len(expected)
    for (a, b, label), (first, second) in zip(pairs, expected):
        assert label in (0, 1)
        assert (a, b) == ((first, second) if label == 0 else (second, first))
    share = sum(p[2] for p in pairs) / len(pairs)
    assert abs(share - 0.5) < 0.05, share


def test_nsp_negatives_come_from_other_documents():
    docs = make_documents(200, seed=4)
    where = _where(docs)
    pairs = make_nsp_pairs(docs, torch.Generator().manual_seed(1))
    expected = _positives(docs)
    assert len(pairs) == len(expected)
    for (a, b, label), (d, i) in zip(pairs, expected):
        assert a == docs[d].sentences[i]
        if label == 0:
            assert b == docs[d].sentences[i + 1]
        else:
            assert any(o != d for o, _ in where[b])
    share = sum(p[2] for p in pairs) / len(pairs)
    assert abs(share - 0.5) < 0.05, share


def test_random_draws_use_the_same_rule():
    """sample_pair (the pretraining's draws) and make_pairs(n=...) build pairs with make_pair."""
    docs = make_documents(100, seed=0)
    candidates = consecutive_pairs(docs)
    for task in ("nsp", "sop"):
        rng = random.Random(0)
        labels = []
        for _ in range(2000):
            (da, ia), (db, ib), label = sample_pair(docs, candidates, task, rng)
            labels.append(label)
            if label == 0:       # consecutive, in order, one episode
                assert da == db and ib == ia + 1
                assert docs[da].episodes[ia] == docs[da].episodes[ib]
            elif task == "nsp":  # B from another document
                assert da != db
            else:                # SOP: the same two sentences, swapped
                assert da == db and ia == ib + 1
        assert abs(sum(labels) / len(labels) - 0.5) < 0.05
        rng = random.Random(1)
        (da, ia), (db, ib), label = sample_pair(docs, candidates, task, rng)
        assert make_pairs(docs, task, 1, n=1)[0] == (docs[da].sentences[ia],
                                                     docs[db].sentences[ib], label)
        rng = random.Random(2)
        assert make_pairs(docs, task, 2) == [
            (docs[a[0]].sentences[a[1]], docs[b[0]].sentences[b[1]], y)
            for a, b, y in (make_pair(docs, c, task, rng) for c in candidates)]


def test_real_text_documents():
    docs = text_documents(pydoc_texts())
    assert len(docs) > 50
    positives = consecutive_pairs(docs)
    assert len(positives) > 1500
    for doc in docs[:20]:
        for s in doc.sentences:
            assert 4 <= len(s.split()) <= 40 and ">>>" not in s
    # consecutive sentences of an episode follow each other in the original text
    texts = pydoc_texts()
    joined = [" ".join(t.split()) for t in texts]
    for d, i in positives[::97]:
        a, b = docs[d].sentences[i], docs[d].sentences[i + 1]
        assert a + " " + b in joined[int(docs[d].topic.removeprefix("text"))], (a, b)


def test_deterministic_and_validated():
    docs = make_documents(20, seed=0)
    assert make_sop_pairs(docs, 5) == make_sop_pairs(docs, 5)
    assert make_nsp_pairs(docs, 5) == make_nsp_pairs(docs, 5)
    assert make_sop_pairs(docs, 5) != make_sop_pairs(docs, 6)
    with pytest.raises(ValueError, match="documents"):
        make_nsp_pairs(docs[:1], 0)
    with pytest.raises(ValueError, match="generator"):
        make_sop_pairs(docs, "seed")
    with pytest.raises(ValueError, match="task"):
        make_pairs(docs, "mlm")
    with pytest.raises(ValueError, match="documents"):
        make_sop_pairs(["not a list of sentences"])
    assert isinstance(docs[0], Document)
