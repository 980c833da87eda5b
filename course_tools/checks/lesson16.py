"""Graded checks for lesson 16: ALBERT's sentence-order-prediction pairs (Hugging Face labels:
0 = in order, 1 = swapped; positives are consecutive sentences of one episode, as in
`course_lib.sentence_pairs`)."""
import torch

from course_lib.data.corpus import make_documents
from ..grading import CheckFailed, exercise, expect, randint


@exercise("16.sop-pairs", points=3, uses="make_sop_pairs")
def check_sop_pairs(fn, rng):
    """One pair per positive (sentences i, i+1 of one episode), label 0 in order / 1 swapped,
    ~50% each, seeded."""
    for case in range(3):
        seed = randint(rng, 0, 2**31)
        n_docs = randint(rng, 150, 250)
        docs = make_documents(n_docs, seed=seed, min_sentences=1 + case, max_sentences=8 + 4 * case)
        expected = [(d, i) for d, doc in enumerate(docs) for i in range(len(doc.sentences) - 1)
                    if doc.episodes[i] == doc.episodes[i + 1]]
        crossing = sum(len(doc.sentences) - 1 for doc in docs) - len(expected)
        got = fn(docs, torch.Generator().manual_seed(seed))
        if not isinstance(got, (list, tuple)):
            raise CheckFailed(f"case {case}: return a list of (A, B, label), got {type(got).__name__}")
        got = list(got)
        if len(got) == len(expected) + crossing:
            raise CheckFailed(f"case {case}: {len(got)} pairs: you paired every two consecutive "
                              f"sentences, also across the {crossing} episode boundaries; keep only "
                              f"i with doc.episodes[i] == doc.episodes[i + 1] ({len(expected)} pairs)")
        expect(len(got) == len(expected), f"case {case}: {n_docs} documents have {len(expected)} "
               f"pairs of consecutive sentences in one episode (one pair each), got {len(got)} pairs")
        for k, (pair, (d, i)) in enumerate(zip(got, expected)):
            if not (isinstance(pair, tuple) and len(pair) == 3):
                raise CheckFailed(f"case {case}, pair {k}: expected a tuple (A, B, label), got {pair!r}")
            a, b, label = pair
            first, second = docs[d].sentences[i], docs[d].sentences[i + 1]
            expect(int(label) in (0, 1), f"case {case}, pair {k}: label must be 0 or 1, got {label!r}")
            want = (first, second) if int(label) == 0 else (second, first)
            if (a, b) != want and first != second and (a, b) == (want[1], want[0]):
                raise CheckFailed(f"case {case}, pair {k}: labels are reversed: Hugging Face's "
                                  f"next_sentence_label is 0 for in order and 1 for swapped")
            expect((a, b) == want or first == second,
                   f"case {case}, pair {k} (document {d}, sentences {i} and {i + 1}): with label "
                   f"{int(label)} expected {want}, got {(a, b)} (0 = in order, 1 = swapped; pairs in "
                   f"document order, never mixing documents or episodes)")
        share = sum(int(p[2]) for p in got) / len(got)
        # several hundred pairs: 0.5 +- 0.1 is more than 4 standard errors
        expect(abs(share - 0.5) < 0.1, f"case {case}: fraction of swapped pairs {share:.3f}, "
               f"expected about 0.5 (swap each pair with probability 1/2)")
        again = fn(docs, torch.Generator().manual_seed(seed))
        expect([int(p[2]) for p in again] == [int(p[2]) for p in got],
               f"case {case}: the same generator seed gave different pairs; draw the coin flips "
               f"from `generator`")
        other = fn(docs, torch.Generator().manual_seed(seed + 1))
        expect([int(p[2]) for p in other] != [int(p[2]) for p in got],
               f"case {case}: a different generator seed gave the same labels; draw the coin flips "
               f"from `generator`")
