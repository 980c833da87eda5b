"""Exercise 16 (word overlap against NSP, SOP and same-document negatives): wrong answers a learner
writes from the task text, and honest alternatives. Answer cells: 0 the prediction, 1
same_document_pairs, 2 overlap_auc, 3 the measurement, 4 the written answer."""
from . import Honest, Mistake

_PAIRS = "def same_document_pairs(documents, generator):\n    pairs = []\n"
_LOOP = ("    for d, doc in enumerate(documents):\n        s = doc.sentences\n"
         "        for i in range(len(s) - 1):\n"
         "            if doc.episodes[i] != doc.episodes[i + 1]:\n                continue\n"
         "            if torch.rand((), generator=generator) < 0.5:\n"
         "                pairs.append((s[i], s[i + 1], 0))\n                continue\n")
_PICK = "            j = others[int(torch.randint(len(others), (1,), generator=generator))]\n"
_END = "    return pairs\n"


def _negative(body):
    return {1: _PAIRS + _LOOP + body + _END}


_AUC = ("def overlap_auc(pairs):\n"
        "    pos = [overlap(a, b) for a, b, label in pairs if label == 0]\n"
        "    neg = [overlap(a, b) for a, b, label in pairs if label == 1]\n")
_GUARD = "    if not pos or not neg:\n        raise ValueError('need both classes')\n"


def _auc(body, guard=_GUARD):
    return {2: _AUC + guard + body}


_MEASURE = ("measured_auc = {}\nfor name, docs in corpora.items():\n"
            "    same = same_document_pairs(docs, torch.Generator().manual_seed(3))\n")

MISTAKES = [
    # 16.same-document-pairs
    Mistake("16.same-document-pairs", "negative-from-another-document", _negative(
        "            other = documents[(d + 1) % len(documents)].sentences\n"
        "            k = int(torch.randint(len(other), (1,), generator=generator))\n"
        "            pairs.append((s[i], other[k], 1))\n"), "another document"),
    Mistake("16.same-document-pairs", "next-sentence-not-excluded", _negative(
        "            others = [j for j in range(len(s)) if j != i]\n" + _PICK +
        "            pairs.append((s[i], s[j], 1))\n"), "leave sentence i + 1 out"),
    Mistake("16.same-document-pairs", "swapped-like-sop", _negative(
        "            pairs.append((s[i + 1], s[i], 1))\n"), "SOP's negative"),
    Mistake("16.same-document-pairs", "only-sentences-after-a", _negative(
        "            others = [j for j in range(i + 2, len(s))] or [j for j in range(i)]\n" + _PICK +
        "            pairs.append((s[i], s[j], 1))\n"), "not only the ones after A"),
    Mistake("16.same-document-pairs", "a-itself-allowed", _negative(
        "            others = [j for j in range(len(s)) if j != i + 1]\n" + _PICK +
        "            pairs.append((s[i], s[j], 1))\n"), "B = A itself"),
    Mistake("16.same-document-pairs", "labels-reversed", {1: _PAIRS + _LOOP.replace("s[i + 1], 0)", "s[i + 1], 1)") +
            "            others = [j for j in range(len(s)) if j not in (i, i + 1)]\n" + _PICK +
            "            pairs.append((s[i], s[j], 0))\n" + _END}, "real next sentence"),
    Mistake("16.same-document-pairs", "python-random-not-generator", {1: "import random\n\n" + _PAIRS +
            _LOOP.replace("torch.rand((), generator=generator) < 0.5", "random.random() < 0.5") +
            "            others = [j for j in range(len(s)) if j not in (i, i + 1)]\n"
            "            pairs.append((s[i], s[random.choice(others)], 1))\n" + _END}, "same generator seed"),
    Mistake("16.same-document-pairs", "pairs-across-episodes", {1: _PAIRS +
            "    for doc in documents:\n        s = doc.sentences\n        for i in range(len(s) - 1):\n"
            "            if torch.rand((), generator=generator) < 0.5:\n"
            "                pairs.append((s[i], s[i + 1], 0))\n                continue\n"
            "            others = [j for j in range(len(s)) if j not in (i, i + 1)]\n" + _PICK +
            "            pairs.append((s[i], s[j], 1))\n" + _END}, "one pair per positive"),
    # 16.overlap-auc
    Mistake("16.overlap-auc", "negatives-scored-higher", _auc(
        "    wins = sum((n > p) + 0.5 * (n == p) for p in pos for n in neg)\n"
        "    return wins / (len(pos) * len(neg))\n"), "1 - AUC"),
    Mistake("16.overlap-auc", "ties-as-losses", _auc(
        "    return sum(p > n for p in pos for n in neg) / (len(pos) * len(neg))\n"), "ties counted as losses"),
    Mistake("16.overlap-auc", "ties-as-wins", _auc(
        "    return sum(p >= n for p in pos for n in neg) / (len(pos) * len(neg))\n"), "ties counted as wins"),
    Mistake("16.overlap-auc", "kth-positive-against-kth-negative", _auc(
        "    duels = [(p > n) + 0.5 * (p == n) for p, n in zip(pos, neg)]\n"
        "    return sum(duels) / len(duels)\n"), "k-th positive"),
    Mistake("16.overlap-auc", "best-threshold-accuracy", _auc(
        "    scores = [(s, 0) for s in pos] + [(s, 1) for s in neg]\n"
        "    best = 0.0\n"
        "    for t, _ in scores:\n"
        "        right = sum((s < t) == bool(label) for s, label in scores)\n"
        "        best = max(best, right / len(scores))\n"
        "    return best\n"), "comparisons"),
    # 16.overlap-auc-one-class
    Mistake("16.overlap-auc-one-class", "divides-by-zero", _auc(
        "    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)\n"
        "    return wins / (len(pos) * len(neg))\n", guard=""), "expected a ValueError"),
    Mistake("16.overlap-auc-one-class", "half-when-undefined", _auc(
        "    if not pos or not neg:\n        return 0.5\n"
        "    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)\n"
        "    return wins / (len(pos) * len(neg))\n", guard=""), "read as a measurement"),
    Mistake("16.overlap-auc-one-class", "nan-from-an-empty-mean", _auc(
        "    p = torch.tensor(pos, dtype=torch.float64)[:, None]\n"
        "    n = torch.tensor(neg, dtype=torch.float64)[None, :]\n"
        "    return ((p > n).double() + 0.5 * (p == n).double()).mean().item()\n", guard=""), "but got nan"),
    Mistake("16.overlap-auc-one-class", "assertion-instead-of-value-error", _auc(
        "    assert pos and neg, 'need both classes'\n"
        "    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)\n"
        "    return wins / (len(pos) * len(neg))\n", guard=""), "got AssertionError"),
    # 16.measured
    Mistake("16.measured", "same-document-measured-on-nsp-pairs", {3: _MEASURE +
            "    measured_auc[name] = {'nsp': overlap_auc(nsp_pairs[name]), 'sop': overlap_auc(sop_pairs[name]),\n"
            "                          'same-document': overlap_auc(nsp_pairs[name])}\n"}, "equals NSP's"),
    Mistake("16.measured", "same-document-measured-on-sop-pairs", {3: _MEASURE +
            "    measured_auc[name] = {'nsp': overlap_auc(nsp_pairs[name]), 'sop': overlap_auc(sop_pairs[name]),\n"
            "                          'same-document': overlap_auc(sop_pairs[name])}\n"}, "equals SOP's"),
    Mistake("16.measured", "prediction-typed-in", {3: "measured_auc = {name: dict(predicted_auc) for name in corpora}\n"},
            "measure those pairs"),
    Mistake("16.measured", "one-corpus-only", {3: _MEASURE.replace("corpora.items()", "[('synthetic', corpora['synthetic'])]") +
            "    measured_auc[name] = {'nsp': overlap_auc(nsp_pairs[name]), 'sop': overlap_auc(sop_pairs[name]),\n"
            "                          'same-document': overlap_auc(same)}\n"}, "one entry per corpus"),
]

HONEST = [
    Honest("random-random-and-mann-whitney-ranks", {
        0: "predicted_auc = dict(nsp=0.9, sop=0.55, **{'same-document': 0.8})\n",
        1: "import random\n\ndef same_document_pairs(documents, generator):\n"
           "    rng = random.Random(int(torch.randint(0, 2**62, (1,), generator=generator)))\n"
           "    out = []\n"
           "    for doc in documents:\n"
           "        s, e = doc.sentences, doc.episodes\n"
           "        for i in range(len(s) - 1):\n"
           "            if e[i] == e[i + 1]:\n"
           "                if rng.random() < 0.5:\n"
           "                    out.append((s[i], s[i + 1], 0))\n"
           "                else:\n"
           "                    j = rng.choice([k for k in range(len(s)) if k != i and k != i + 1])\n"
           "                    out.append((s[i], s[j], 1))\n"
           "    return out\n",
        2: "import pandas as pd\n\ndef overlap_auc(pairs):\n"
           "    scores = pd.Series([overlap(a, b) for a, b, _ in pairs], dtype=float)\n"
           "    positive = pd.Series([label == 0 for _, _, label in pairs])\n"
           "    n_pos, n_neg = int(positive.sum()), int((~positive).sum())\n"
           "    if n_pos == 0 or n_neg == 0:\n"
           "        raise ValueError(f'pairs: {n_pos} positives and {n_neg} negatives; need both')\n"
           "    ranks = scores.rank(method='average')\n"
           "    u = ranks[positive].sum() - n_pos * (n_pos + 1) / 2\n"
           "    return float(u / (n_pos * n_neg))\n"}),
    Honest("rejection-sampling-and-sorted-counts", {
        1: "def same_document_pairs(documents, generator):\n"
           "    pairs = []\n"
           "    for doc in documents:\n"
           "        n = len(doc.sentences)\n"
           "        for i in range(n - 1):\n"
           "            if doc.episodes[i] != doc.episodes[i + 1]:\n                continue\n"
           "            a = doc.sentences[i]\n"
           "            if bool(torch.randint(0, 2, (), generator=generator)):\n"
           "                while True:   # a uniform draw among the n - 2 others\n"
           "                    j = int(torch.randint(0, n, (), generator=generator))\n"
           "                    if j not in (i, i + 1):\n                        break\n"
           "                pairs.append((a, doc.sentences[j], 1))\n"
           "            else:\n"
           "                pairs.append((a, doc.sentences[i + 1], 0))\n"
           "    return pairs\n",
        2: "from bisect import bisect_left, bisect_right\nimport numpy as np\n\n"
           "def overlap_auc(pairs):\n"
           "    pos = np.array([overlap(a, b) for a, b, y in pairs if y == 0])\n"
           "    neg = np.sort([overlap(a, b) for a, b, y in pairs if y == 1])\n"
           "    if len(pos) == 0 or len(neg) == 0:\n"
           "        raise ValueError('overlap_auc: the AUC needs at least one positive and one negative')\n"
           "    below = np.searchsorted(neg, pos, side='left')\n"
           "    tied = np.searchsorted(neg, pos, side='right') - below\n"
           "    return (below + 0.5 * tied).sum() / (len(pos) * len(neg))\n",
        3: "measured_auc = {\n"
           "    name: {'nsp': overlap_auc(nsp_pairs[name]), 'sop': overlap_auc(sop_pairs[name]),\n"
           "           'same-document': overlap_auc(same_document_pairs(docs, torch.Generator().manual_seed(42)))}\n"
           "    for name, docs in corpora.items()}\n"}),
]
