"""NSP and SOP sentence pairs from a document corpus (lesson 16).

Both tasks start from the same positives: two consecutive sentences (i, i+1) of one document,
in their order. They differ only in the negatives:

- NSP (BERT): B is replaced by a sentence of *another* document. A negative usually changes the
  topic, so a model can solve most of NSP by "do A and B share vocabulary?".
- SOP (ALBERT): A and B are *swapped*. Same document, same words: only their order differs.

Labels here say "is this the real thing?": 1 = B really follows A (NSP) / in order (SOP),
0 = negative. (Hugging Face's `next_sentence_label` and `course_lib.pretraining` use the
opposite convention, 0 = real next sentence.)
"""
from __future__ import annotations

import random

import torch

from .corpus import Document

Pair = tuple[str, str, int]


def _as_random(generator) -> random.Random:
    """An int seed, a `random.Random` (used as is) or a `torch.Generator` (seeds a new one)."""
    if isinstance(generator, random.Random):
        return generator
    if isinstance(generator, torch.Generator):
        return random.Random(int(torch.randint(2**62, (1,), generator=generator)))
    if isinstance(generator, int):
        return random.Random(generator)
    raise ValueError(f"generator: expected an int, random.Random or torch.Generator, "
                     f"got {type(generator).__name__}")


def _sentences(documents) -> list[list[str]]:
    out = []
    for d, doc in enumerate(documents):
        sentences = doc.sentences if isinstance(doc, Document) else doc
        if isinstance(sentences, str) or not all(isinstance(s, str) for s in sentences):
            raise ValueError(f"documents[{d}]: expected a Document or a list of sentence "
                             f"strings, got {type(doc).__name__}")
        out.append(list(sentences))
    return out


def make_sop_pairs(documents, generator=0) -> list[Pair]:
    """One pair per consecutive sentence pair (i, i+1) of every document, in document order:
    (s_i, s_i+1, 1) with probability 1/2, else the swapped (s_i+1, s_i, 0).

    documents: `course_lib.corpus.Document`s or lists of sentences; generator: an int seed,
    `random.Random` or `torch.Generator` (deterministic given it)."""
    rng = _as_random(generator)
    pairs = []
    for sentences in _sentences(documents):
        for a, b in zip(sentences, sentences[1:]):
            pairs.append((a, b, 1) if rng.random() < 0.5 else (b, a, 0))
    return pairs


def make_nsp_pairs(documents, generator=0) -> list[Pair]:
    """One pair per consecutive sentence pair (i, i+1) of every document, in document order:
    (s_i, s_i+1, 1) with probability 1/2, else (s_i, a random sentence of another document, 0).
    Needs at least two documents."""
    rng = _as_random(generator)
    docs = _sentences(documents)
    if len(docs) < 2:
        raise ValueError(f"documents: need at least 2 documents for NSP negatives, got {len(docs)}")
    others = [d for d, s in enumerate(docs) if s]
    pairs = []
    for d, sentences in enumerate(docs):
        for a, b in zip(sentences, sentences[1:]):
            if rng.random() < 0.5:
                pairs.append((a, b, 1))
                continue
            choices = [o for o in others if o != d]
            if not choices:
                raise ValueError("documents: no other non-empty document to draw a negative from")
            other = docs[rng.choice(choices)]
            pairs.append((a, rng.choice(other), 0))
    return pairs
