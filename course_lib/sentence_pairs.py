"""NSP and SOP sentence pairs: the course's one pair sampler (lesson 16, lesson 17 and
`course_lib.pretraining_batches`, which batches pretraining's pairs, all draw their pairs here).
Not to be confused with `course_lib.data.similarity_pairs`, lesson 19's labelled similarity set.

Both tasks start from the same positives: two consecutive sentences (i, i+1) of one *episode*
of one document, in their order. They differ only in the negatives:

- NSP (BERT): B is replaced by a random sentence of *another* document. A negative usually
  changes the topic, so a model can solve most of NSP by "do A and B share vocabulary?".
- SOP (ALBERT): A and B are *swapped*. Same document, same words: only their order differs.

Labels follow Hugging Face's `BertForPreTraining(next_sentence_label=...)` and BERT's and
ALBERT's data code: 0 = B is the continuation of A (NSP) / the pair is in order (SOP);
1 = B is a random sentence (NSP) / the pair is swapped (SOP).

Episodes: a synthetic document (`course_lib.data.corpus.Document`) narrates episodes, and the verb
order that SOP can learn holds only inside one (the script restarts in the next episode). A
real-text document (`text_documents`) has one episode per run of prose sentences. A plain list of
sentences counts as a single episode.
"""
from __future__ import annotations

import numbers
import random
import re

import torch

from .data.corpus import Document
from .validation import refuse_one_text, require_choice

TASKS = ("nsp", "sop")
IS_NEXT, NOT_NEXT = 0, 1    # Hugging Face's next_sentence_label values

Pair = tuple[str, str, int]
Location = tuple[int, int]  # (document index, sentence index)


def as_random(generator) -> random.Random:
    """An int seed, a `random.Random` (used as is) or a `torch.Generator` (seeds a new one)."""
    if isinstance(generator, random.Random):
        return generator
    if isinstance(generator, torch.Generator):
        return random.Random(int(torch.randint(2**62, (1,), generator=generator)))
    if isinstance(generator, numbers.Integral) and not isinstance(generator, bool):
        return random.Random(int(generator))        # a numpy int too (random.Random refuses one)
    raise ValueError(f"generator: expected an int, random.Random or torch.Generator, "
                     f"got {type(generator).__name__}")


def as_documents(documents) -> list[Document]:
    """`Document`s as they are; a list of sentence strings becomes a one-episode Document."""
    refuse_one_text("documents", documents)
    out = []
    for d, doc in enumerate(documents):
        if not isinstance(doc, Document):
            refuse_one_text(f"documents[{d}]", doc)     # a str would be one sentence per character
            doc = Document("text", list(doc), episodes=[0] * len(doc))
        out.append(doc)
    return out


def consecutive_pairs(documents) -> list[Location]:
    """(document, i) for every sentence i whose next sentence i+1 is in the same episode,
    documents in order, i increasing: the positives of both tasks."""
    docs = as_documents(documents)
    return [(d, i) for d, doc in enumerate(docs) for i in range(len(doc.sentences) - 1)
            if _episode(doc, i) == _episode(doc, i + 1)]


def _episode(doc: Document, i: int) -> int:
    return doc.episodes[i] if doc.episodes else 0


def make_pair(documents, location: Location, task: str,
              rng: random.Random) -> tuple[Location, Location, int]:
    """The pair built on the positive at `location` = (d, i): (where A is, where B is, label).

    With probability 1/2 the positive itself, label 0. Otherwise label 1 and
    nsp: B is a uniformly drawn sentence of a uniformly drawn *other* document;
    sop: A and B swapped.
    """
    require_choice("task", task, TASKS)
    d, i = location
    # the positive is (i, i + 1): the last sentence has no next one (a negative index would wrap)
    if not 0 <= d < len(documents) or not 0 <= i < _n_sentences(documents[d]) - 1:
        raise ValueError(f"location: expected (document index, index of a sentence with a next "
                         f"one), got {location!r}")
    a, b = (d, i), (d, i + 1)
    if rng.random() < 0.5:
        return a, b, IS_NEXT
    if task == "sop":
        return b, a, NOT_NEXT
    if len(documents) < 2:
        raise ValueError(f"documents: need at least 2 documents for NSP negatives, "
                         f"got {len(documents)}")
    other = rng.randrange(len(documents) - 1)
    other += other >= d                                   # any document but d
    return a, (other, rng.randrange(len(documents[other].sentences))), NOT_NEXT


def _n_sentences(doc) -> int:
    return len(doc.sentences if isinstance(doc, Document) else doc)


def sample_pair(documents, candidates: list[Location], task: str,
                rng: random.Random) -> tuple[Location, Location, int]:
    """A positive drawn uniformly from `candidates` (`consecutive_pairs(documents)`), then
    `make_pair`. What the pretraining draws, batch after batch."""
    return make_pair(documents, rng.choice(candidates), task, rng)


def make_pairs(documents, task: str, generator=0, n: int | None = None) -> list[Pair]:
    """(A, B, label) triples. n=None: one pair per positive (`consecutive_pairs`), in document
    order; n: that many positives drawn with replacement. Deterministic given `generator` (an
    int seed, a `random.Random` or a `torch.Generator`)."""
    rng = as_random(generator)
    docs = as_documents(documents)
    candidates = consecutive_pairs(docs)
    locations = candidates if n is None else [rng.choice(candidates) for _ in range(n)]
    out = []
    for location in locations:
        (da, ia), (db, ib), label = make_pair(docs, location, task, rng)
        out.append((docs[da].sentences[ia], docs[db].sentences[ib], label))
    return out


def make_nsp_pairs(documents, generator=0) -> list[Pair]:
    """BERT's NSP pairs, one per positive: (s_i, s_i+1, 0) or (s_i, random other-document
    sentence, 1), each with probability 1/2."""
    return make_pairs(documents, "nsp", generator)


def make_sop_pairs(documents, generator=0) -> list[Pair]:
    """ALBERT's SOP pairs, one per positive: (s_i, s_i+1, 0) or swapped (s_i+1, s_i, 1), each
    with probability 1/2."""
    return make_pairs(documents, "sop", generator)


# ---------------------------------------------------------------------------------------------
# Real text
# ---------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\"'][.!?])\s+(?=[A-Z])")
_WORD = re.compile(r"[\"'(*]*[A-Za-z][A-Za-z'-]*[.,;:!?)\"'*]*$")


def _is_prose(paragraph: str) -> bool:
    """Not code, grammar, a table or a heading: at least 70% of its tokens are words."""
    tokens = paragraph.split()
    if not tokens or any(marker in paragraph for marker in (">>>", "::=", "***", "===", "---")):
        return False
    return sum(bool(_WORD.match(token)) for token in tokens) >= 0.7 * len(tokens)


def text_documents(texts: list[str], min_words: int = 4, max_words: int = 40,
                   name: str = "text") -> list[Document]:
    """Real text as Documents: each text's prose paragraphs split into sentences. What is not
    prose (code, grammar, tables, headings) or not a sentence of `min_words` to `max_words`
    words is dropped and ends an episode: an episode is a run of sentences that really were
    consecutive in the text."""
    refuse_one_text("texts", texts)           # one str would be read character by character
    docs = []
    for t, text in enumerate(texts):
        doc = Document(f"{name}{t}", [])
        episode = 0
        for paragraph in re.split(r"\n\s*\n", text):
            paragraph = " ".join(paragraph.split())
            if not _is_prose(paragraph):
                episode += 1
                continue
            for sentence in _SENTENCE_END.split(paragraph):
                if min_words <= len(sentence.split()) <= max_words:
                    doc.sentences.append(sentence)
                    doc.episodes.append(episode)
                else:
                    episode += 1
        if doc.sentences:
            docs.append(doc)
    return docs
