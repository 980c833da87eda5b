"""Graded checks for lesson 16: why NSP is easy and SOP is not, measured with word overlap.

NSP's negatives come from another document, so "do A and B share words?" tells most of them from
the real next sentence; SOP's negatives are the same two sentences swapped, so word overlap is blind
to them. The exercise adds the control the lesson did not run, NSP negatives drawn from A's *own*
document (the topic is kept, only "is B the next sentence?" is left), and measures how well word
overlap separates positives from each kind of negative, threshold-free: the ROC-AUC of the overlap
score. Hugging Face's labels: 0 = B is the real next sentence (or in order), 1 = a negative.
"""
import random
import re
from bisect import bisect_left, bisect_right
from functools import lru_cache

import torch

from course_lib.data.corpus import make_documents, pydoc_texts
from course_lib.sentence_pairs import make_pairs, text_documents

from ..grader.authoring import CheckFailed, exercise, expect, randint, written

STOP_WORDS = set("a an and are as at be by can for from if in into is it its not of on or that the "
                 "this to was which with".split())
KINDS = ("nsp", "sop", "same-document")
AUC_FORBIDS = ("course_lib.sentence_similarity:roc_auc", "sklearn.metrics:roc_auc_score",
               "sklearn.metrics:auc", "scipy.stats:mannwhitneyu", "torchmetrics.functional:auroc")
PAIR_FORBIDS = ("course_lib.sentence_pairs:consecutive_pairs", "course_lib.sentence_pairs:make_nsp_pairs")


@lru_cache(maxsize=100_000)
def words(sentence):
    return frozenset(w for w in re.findall(r"[a-z]+", sentence.lower()) if w not in STOP_WORDS)


def overlap(a, b):
    """The lesson's (and the exercise's set-up cell's) word overlap: Jaccard of the content words."""
    A, B = words(a), words(b)
    return len(A & B) / max(len(A | B), 1)


# ---------------------------------------------------------------- references

def positives(documents):
    """(d, i) for every i whose next sentence is in the same episode, documents in order."""
    return [(d, i) for d, doc in enumerate(documents) for i in range(len(doc.sentences) - 1)
            if doc.episodes[i] == doc.episodes[i + 1]]


def same_document_pairs(documents, generator):
    """Reference: the positive with probability 1/2, else B = another sentence of A's document."""
    rng = random.Random(int(torch.randint(2**62, (1,), generator=generator)))
    out = []
    for d, i in positives(documents):
        s = documents[d].sentences
        if rng.random() < 0.5:
            out.append((s[i], s[i + 1], 0))
        else:
            j = rng.choice([k for k in range(len(s)) if k not in (i, i + 1)])
            out.append((s[i], s[j], 1))
    return out


def _comparisons(pairs):
    """(wins, ties, n_pos, n_neg): positive (label 0) vs negative (label 1) overlap comparisons."""
    pos = [overlap(a, b) for a, b, label in pairs if int(label) == 0]
    neg = [overlap(a, b) for a, b, label in pairs if int(label) == 1]
    neg_sorted = sorted(neg)
    wins = sum(bisect_left(neg_sorted, p) for p in pos)                       # negatives below p
    ties = sum(bisect_right(neg_sorted, p) - bisect_left(neg_sorted, p) for p in pos)
    return wins, ties, len(pos), len(neg)


def auc(pairs, tie=0.5):
    wins, ties, n_pos, n_neg = _comparisons(pairs)
    return (wins + tie * ties) / (n_pos * n_neg)


@lru_cache(maxsize=1)
def _corpora():
    """The exercise's set-up: 300 synthetic documents and Python's docs (3 sentences or more)."""
    return {"synthetic": make_documents(300, seed=1),
            "Python docs": [d for d in text_documents(pydoc_texts()) if len(d.sentences) >= 3]}


@lru_cache(maxsize=1)
def _set_up_auc():
    """The AUCs of the set-up cell's NSP and SOP pairs (the learner measures these exact pairs)."""
    return {name: {task: auc(make_pairs(docs, task, torch.Generator().manual_seed(0)))
                   for task in ("nsp", "sop")} for name, docs in _corpora().items()}


# ---------------------------------------------------------------- 16.same-document-pairs

def _hidden_documents(rng, case):
    """Synthetic documents of 3 sentences or more, or a sample of Python's docs."""
    if case == 2:
        texts = _corpora()["Python docs"]
        keep = torch.randperm(len(texts), generator=rng)[:randint(rng, 15, 30)].sort().values.tolist()
        return [texts[k] for k in keep], f"{len(keep)} texts of Python's documentation"
    n = randint(rng, 40, 90)
    docs = make_documents(n, seed=randint(rng, 0, 2**31), min_sentences=3 + case, max_sentences=7 + 3 * case)
    return docs, f"{n} synthetic documents"


def _as_pairs(case, got, n_expected):
    if not isinstance(got, (list, tuple)):
        raise CheckFailed(f"[{case}] return a list of (A, B, label) triples, got {type(got).__name__}")
    for k, pair in enumerate(got):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 3 and isinstance(pair[0], str)
                and isinstance(pair[1], str) and pair[2] in (0, 1)):
            raise CheckFailed(f"[{case}] pair {k} should be a triple (A, B, label) of two sentences and "
                              f"a label 0 or 1, got {pair!r:.120}")
    if len(got) != n_expected:
        raise CheckFailed(f"[{case}] expected one pair per positive (sentences i, i+1 of one episode): "
                          f"{n_expected} pairs, got {len(got)}")
    return [(a, b, int(label)) for a, b, label in got]


@exercise("16.same-document-pairs", points=2, uses="same_document_pairs", forbids=PAIR_FORBIDS)
def check_same_document_pairs(fn, rng):
    """NSP whose negatives stay in A's document: positives in order, label 0 / 1 about half each,
    a negative's B drawn uniformly from A's document without A and its next sentence; seeded."""
    for number in range(3):
        docs, what = _hidden_documents(rng, number)
        case = f"case {number}: {what}"
        seed = randint(rng, 0, 2**31)
        where = positives(docs)
        got = _as_pairs(case, fn(docs, torch.Generator().manual_seed(seed)), len(where))
        before = expected_before = variance = 0.0
        for k, ((a, b, label), (d, i)) in enumerate(zip(got, where)):
            s = docs[d].sentences
            at = f"[{case}] pair {k} (document {d}, sentences {i} and {i + 1})"
            if a != s[i]:
                if (a, b) == (s[i + 1], s[i]):
                    raise CheckFailed(f"{at}: A and B are swapped - that is SOP's negative; here A stays "
                                      f"sentence i and only B changes")
                raise CheckFailed(f"{at}: A should be sentence {i} of the document, {s[i]!r}, got {a!r} "
                                  f"(one pair per positive, documents in order, i increasing)")
            if label == 0:
                expect(b == s[i + 1], f"{at}: label 0 means B is A's real next sentence {s[i + 1]!r}, "
                       f"got {b!r}")
                continue
            others = [j for j in range(len(s)) if j not in (i, i + 1) and s[j] == b]
            if not others:
                if b == s[i + 1]:
                    raise CheckFailed(f"{at}: label 1 but B is A's real next sentence: leave sentence i + 1 "
                                      f"out of the draw")
                if b == s[i]:
                    raise CheckFailed(f"{at}: label 1 with B = A itself: draw B among the document's "
                                      f"*other* sentences (not i, not i + 1)")
                raise CheckFailed(f"{at}: B {b!r:.60} is not a sentence of A's document: that is BERT's "
                                  f"NSP negative (another document); here the negative stays in A's document")
            p = i / (len(s) - 2)          # the chance that a uniform draw lands before sentence i
            before += others[0] < i
            expected_before += p
            variance += p * (1 - p)
        share = sum(label for _, _, label in got) / len(got)
        # a hundred pairs or more: 0.5 +- 0.15 is more than 3 standard errors
        expect(abs(share - 0.5) < 0.15, f"[{case}] {share:.0%} of the pairs are negatives, expected about "
               f"half (keep the positive with probability 1/2)")
        # uniform over the other sentences: how many negatives come from before A, against the count
        # a uniform draw gives (6 standard deviations, +2 for small counts)
        expect(abs(before - expected_before) < 6 * variance ** 0.5 + 2,
               f"[{case}] {int(before)} negatives took B from before A, a uniform draw over the document's "
               f"other sentences gives about {expected_before:.0f}: draw j uniformly among all sentences "
               f"except i and i + 1, not only the ones after A (or only the nearest)")
        again = _as_pairs(case, fn(docs, torch.Generator().manual_seed(seed)), len(where))
        expect(again == got, f"[{case}] the same generator seed gave different pairs: draw every coin flip "
               f"and every B from `generator`")
        other = _as_pairs(case, fn(docs, torch.Generator().manual_seed(seed + 1)), len(where))
        expect(other != got, f"[{case}] a different generator seed gave the same pairs: draw from "
               f"`generator`, not from a fixed seed")


# ---------------------------------------------------------------- 16.overlap-auc

def _pair_cases(rng):
    """Lists of (A, B, label): pairs of every kind from hidden documents, subsampled; ties abound."""
    docs = make_documents(randint(rng, 30, 60), seed=randint(rng, 0, 2**31))
    texts = _corpora()["Python docs"]
    pools = {
        "NSP pairs": make_pairs(docs, "nsp", torch.Generator().manual_seed(randint(rng, 0, 2**31))),
        "SOP pairs": make_pairs(docs, "sop", torch.Generator().manual_seed(randint(rng, 0, 2**31))),
        "same-document NSP pairs": same_document_pairs(docs, torch.Generator().manual_seed(randint(rng, 0, 2**31))),
        "NSP pairs of Python's docs": make_pairs(texts, "nsp", torch.Generator().manual_seed(randint(rng, 0, 2**31))),
    }
    out = []
    for name, pool in pools.items():
        for size in (randint(rng, 6, 16), randint(rng, 40, 120)):
            pick = torch.randperm(len(pool), generator=rng)[:size].tolist()
            pairs = [pool[k] for k in pick]
            if len({label for *_, label in pairs}) == 2:
                out.append((name, pairs))
    return out


def _value(case, got):
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        raise CheckFailed(f"[{case}] overlap_auc should return a number (a float), got {type(got).__name__}")
    return float(got)


GUESSES = (
    ("one-minus", "that is 1 - AUC: you measured how often a negative has the larger overlap; the positives "
                  "(label 0, B is the real next sentence) should score higher"),
    ("ties-lose", "ties counted as losses: a tie between a positive and a negative counts 1/2"),
    ("ties-win", "ties counted as wins: a tie between a positive and a negative counts 1/2"),
    ("zipped", "you compared the k-th positive with the k-th negative only; compare every positive with "
               "every negative"),
)


def _variants(pairs):
    """The AUC and what the usual mistakes give on the same pairs."""
    wins, ties, n_pos, n_neg = _comparisons(pairs)
    n = n_pos * n_neg
    pos = [overlap(a, b) for a, b, label in pairs if label == 0]
    neg = [overlap(a, b) for a, b, label in pairs if label == 1]
    zipped = [(p > q) + 0.5 * (p == q) for p, q in zip(pos, neg)]
    expected = (wins + ties / 2) / n
    return expected, {"one-minus": 1 - expected, "ties-lose": wins / n, "ties-win": (wins + ties) / n,
                      "zipped": sum(zipped) / max(len(zipped), 1)}


@exercise("16.overlap-auc", points=2, uses="overlap_auc", forbids=AUC_FORBIDS)
def check_overlap_auc(fn, rng):
    """ROC-AUC of the word-overlap score, positives (label 0) against negatives (label 1), ties 1/2."""
    wrong = []      # (case, got, expected, the mistakes' values): diagnosed over every case at once
    order = None
    for number, (name, pairs) in enumerate(_pair_cases(rng)):
        wins, ties, n_pos, n_neg = _comparisons(pairs)
        case = f"case {number}: {len(pairs)} {name}, {n_pos} positives, {n_neg} negatives, {ties} tied comparisons"
        expected, variants = _variants(pairs)
        got = _value(case, fn(list(pairs)))
        if abs(got - expected) >= 1e-9:
            wrong.append((case, got, expected, variants))
            continue
        shuffled = [pairs[k] for k in torch.randperm(len(pairs), generator=rng).tolist()]
        again = _value(case, fn(shuffled))
        if abs(again - expected) >= 1e-9:
            wrong.append((f"{case}, the same pairs shuffled", again, expected, _variants(shuffled)[1]))
            order = (f"[{case}] the same pairs in another order gave {again:.6f} instead of {got:.6f}: the "
                     f"AUC does not depend on the order of the pairs")
    if not wrong:
        return
    case, got, expected, _ = wrong[0]
    for key, message in GUESSES:   # a mistake that explains every wrong case (one case can fit two)
        if all(abs(g - v[key]) < 1e-9 for _, g, _, v in wrong):
            raise CheckFailed(f"[{case}] got {got:.6f}, expected {expected:.6f}: {message}")
    if order is not None:
        raise CheckFailed(order)
    raise CheckFailed(f"[{case}] got {got:.6f}, expected {expected:.6f}: the share of all (positive, negative) "
                      f"combinations in which the positive has the larger overlap, a tie counting 1/2")


@exercise("16.overlap-auc-one-class", points=1, uses="overlap_auc", forbids=AUC_FORBIDS)
def check_overlap_auc_one_class(fn, rng):
    """No positive or no negative: the AUC is undefined, a ValueError (not 0.5, not NaN)."""
    docs = make_documents(20, seed=randint(rng, 0, 2**31))
    pairs = make_pairs(docs, "nsp", torch.Generator().manual_seed(randint(rng, 0, 2**31)))
    for case, subset in (("only positives (every label 0)", [p for p in pairs if p[2] == 0]),
                         ("only negatives (every label 1)", [p for p in pairs if p[2] == 1]),
                         ("no pairs at all", [])):
        try:
            got = fn(subset)
        except ValueError:
            continue
        except (CheckFailed, NotImplementedError):
            raise
        except Exception as error:  # noqa: BLE001 - the learner's code
            raise CheckFailed(f"[{case}] expected a ValueError (the AUC compares positives with negatives: "
                              f"with one class there is nothing to compare), got {type(error).__name__}: "
                              f"{error}") from None
        raise CheckFailed(f"[{case}] expected a ValueError (with one class there is nothing to compare), "
                          f"but got {got!r}: a number here would be read as a measurement")


# ---------------------------------------------------------------- 16.measured

RANGES = {  # the reference's same-document AUC over 200 generator seeds: 0.59-0.68 and 0.69-0.74
    ("synthetic", "same-document"): (0.55, 0.8),
    ("Python docs", "same-document"): (0.6, 0.8),
}


def _fmt(values):
    return " / ".join(f"{values[k]:.2f}" if isinstance(values.get(k), (int, float)) else "?" for k in KINDS)


@exercise("16.measured", points=1, uses=("measured_auc", "predicted_auc"))
def check_measured(measured, predicted, rng):
    """The three AUCs measured on the set-up's corpora, beside the prediction written before."""
    corpora = _corpora()
    expect(isinstance(measured, dict) and set(measured) == set(corpora),
           f"measured_auc should be a dict with one entry per corpus {sorted(corpora)}, got "
           f"{sorted(measured) if isinstance(measured, dict) else type(measured).__name__}")
    reference = _set_up_auc()
    for name in corpora:
        values = measured[name]
        expect(isinstance(values, dict) and set(values) == set(KINDS),
               f"measured_auc[{name!r}] should be a dict with the keys {list(KINDS)}, got {values!r:.80}")
        for kind in KINDS:
            value = values[kind]
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                value = values[kind] = value.item()
            expect(isinstance(value, (int, float)) and not isinstance(value, bool),
                   f"measured_auc[{name!r}][{kind!r}] should be a number, got {value!r:.40}")
        for task in ("nsp", "sop"):
            want = reference[name][task]
            expect(abs(values[task] - want) < 1e-6,
                   f"measured_auc[{name!r}][{task!r}] is {values[task]:.4f}, but overlap_auc of the set-up's "
                   f"{task}_pairs[{name!r}] is {want:.4f}: measure those pairs with your overlap_auc")
        same, nsp = values["same-document"], values["nsp"]
        if abs(same - nsp) < 1e-9:
            raise CheckFailed(f"measured_auc[{name!r}]: the same-document AUC equals NSP's ({nsp:.4f}): "
                              f"measure same_document_pairs(corpora[{name!r}], generator), not nsp_pairs")
        if abs(same - values["sop"]) < 1e-9:
            raise CheckFailed(f"measured_auc[{name!r}]: the same-document AUC equals SOP's: measure "
                              f"same_document_pairs(corpora[{name!r}], generator), not sop_pairs")
        low, high = RANGES[(name, "same-document")]
        expect(low <= same <= high, f"measured_auc[{name!r}]['same-document'] is {same:.3f}; with B drawn from "
               f"A's own document (and your same_document_pairs passing its check) it lies between {low} and "
               f"{high} at every generator seed: measure same_document_pairs(corpora[{name!r}], generator)")
    if isinstance(predicted, dict) and all(isinstance(predicted.get(k), (int, float)) for k in KINDS):
        said = f"you predicted NSP / SOP / same-document {_fmt(predicted)}"
    else:
        said = "you recorded no prediction (a dict with the keys 'nsp', 'sop', 'same-document')"
    return (f"{said}; word overlap measures " + ", ".join(f"{name} {_fmt(measured[name])}" for name in corpora))


written("16.written", points=2, rubric=(
    "NSP: is B the real next sentence of A or a random sentence from another document; SOP: two "
    "consecutive sentences of one document, in order or swapped (labels 50/50 in both)",
    "NSP's negatives change the topic, so an order-blind cue (word overlap) solves most of it (about 0.8 "
    "AUC on real text, about 1.0 on the synthetic corpus): NSP largely tests topic, which MLM already "
    "teaches",
    "SOP's negatives share every word and the topic with the positive, so overlap is at chance (0.5): "
    "only coherence / discourse order solves it; same-document NSP negatives already remove most of the "
    "topic cue",
    "the evidence for the switch: an SOP-trained model does well on NSP (ALBERT Table 5: 78.9%) while an "
    "NSP-trained one is at chance on SOP (52%)",
))
