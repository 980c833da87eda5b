"""Graded checks for lesson 16: ALBERT's sentence-order-prediction pairs."""
import torch

from course_lib.corpus import make_documents
from ..grading import CheckFailed, exercise, expect


@exercise("16.sop-pairs", points=3, uses="make_sop_pairs")
def check_sop_pairs(fn, rng):
    """One pair per consecutive sentence pair, label 1 in order / 0 swapped, ~50% each, seeded."""
    for case in range(3):
        seed = int(torch.randint(0, 2**31, (1,), generator=rng))
        n_docs = int(torch.randint(150, 250, (1,), generator=rng))
        docs = make_documents(n_docs, seed=seed, min_sentences=1 + case, max_sentences=8)
        expected = [(d, i) for d, doc in enumerate(docs) for i in range(len(doc.sentences) - 1)]
        got = fn(docs, torch.Generator().manual_seed(seed))
        if not isinstance(got, (list, tuple)):
            raise CheckFailed(f"case {case}: return a list of (A, B, label), got {type(got).__name__}")
        got = list(got)
        expect(len(got) == len(expected), f"case {case}: {n_docs} documents have {len(expected)} "
               f"consecutive sentence pairs (one pair each), got {len(got)} pairs")
        for k, (pair, (d, i)) in enumerate(zip(got, expected)):
            if not (isinstance(pair, tuple) and len(pair) == 3):
                raise CheckFailed(f"case {case}, pair {k}: expected a tuple (A, B, label), got {pair!r}")
            a, b, label = pair
            first, second = docs[d].sentences[i], docs[d].sentences[i + 1]
            expect(int(label) in (0, 1), f"case {case}, pair {k}: label must be 0 or 1, got {label!r}")
            want = (first, second) if int(label) == 1 else (second, first)
            expect((a, b) == want or first == second,
                   f"case {case}, pair {k} (document {d}, sentences {i} and {i + 1}): with label "
                   f"{int(label)} expected {want}, got {(a, b)} (1 = in order, 0 = swapped; pairs in "
                   f"document order, never mixing documents)")
        share = sum(int(p[2]) for p in got) / len(got)
        # about 1000 pairs: 0.5 +- 0.08 is more than 5 standard errors
        expect(abs(share - 0.5) < 0.08, f"case {case}: fraction of in-order pairs {share:.3f}, "
               f"expected about 0.5 (swap each pair with probability 1/2)")
        again = fn(docs, torch.Generator().manual_seed(seed))
        expect([int(p[2]) for p in again] == [int(p[2]) for p in got],
               f"case {case}: the same generator seed gave different pairs; draw the coin flips "
               f"from `generator`")
        other = fn(docs, torch.Generator().manual_seed(seed + 1))
        expect([int(p[2]) for p in other] != [int(p[2]) for p in got],
               f"case {case}: a different generator seed gave the same labels; draw the coin flips "
               f"from `generator`")
