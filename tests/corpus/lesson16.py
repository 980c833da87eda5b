"""Exercise 16 (ALBERT's sentence-order-prediction pairs): wrong answers and honest alternatives."""
from . import Honest, Mistake

_DEF = "import random\nimport torch\n\ndef make_sop_pairs(documents, generator):\n    pairs = []\n"
_LOOP = ("    for doc in documents:\n        for i in range(len(doc.sentences) - 1):\n"
         "            if doc.episodes[i] != doc.episodes[i + 1]:\n                continue\n"
         "            a, b = doc.sentences[i], doc.sentences[i + 1]\n")
_END = "    return pairs\n"

MISTAKES = [
    Mistake("16.sop-pairs", "pairs-across-episodes",
            {0: _DEF + "    for doc in documents:\n        for i in range(len(doc.sentences) - 1):\n"
                "            a, b = doc.sentences[i], doc.sentences[i + 1]\n"
                "            keep = bool(torch.rand((), generator=generator) < 0.5)\n"
                "            pairs.append((a, b, 0) if keep else (b, a, 1))\n" + _END}, "episode boundaries"),
    Mistake("16.sop-pairs", "labels-reversed",
            {0: _DEF + _LOOP + "            keep = bool(torch.rand((), generator=generator) < 0.5)\n"
                "            pairs.append((a, b, 1) if keep else (b, a, 0))\n" + _END}, "labels are reversed"),
    Mistake("16.sop-pairs", "never-swapped",
            {0: _DEF + _LOOP + "            pairs.append((a, b, 0))\n" + _END}, "fraction of swapped pairs"),
    Mistake("16.sop-pairs", "global-random-not-generator",
            {0: _DEF + _LOOP + "            keep = random.random() < 0.5\n"
                "            pairs.append((a, b, 0) if keep else (b, a, 1))\n" + _END}, "draw the coin flips"),
    Mistake("16.sop-pairs", "nsp-style-random-negative",
            {0: _DEF + "    rng = random.Random(int(torch.randint(0, 2**31, (1,), generator=generator)))\n"
                "    all_sentences = [s for d in documents for s in d.sentences]\n" + _LOOP +
                "            if rng.random() < 0.5:\n                pairs.append((a, b, 0))\n"
                "            else:\n                pairs.append((a, rng.choice(all_sentences), 1))\n" + _END},
            "with label 1 expected"),
    Mistake("16.sop-pairs", "swap-probability-one-fifth",
            {0: _DEF + _LOOP + "            keep = bool(torch.rand((), generator=generator) < 0.8)\n"
                "            pairs.append((a, b, 0) if keep else (b, a, 1))\n" + _END}, "fraction of swapped pairs"),
    Mistake("16.sop-pairs", "last-pair-of-each-document-dropped",
            {0: _DEF + "    for doc in documents:\n        for i in range(len(doc.sentences) - 2):\n"
                "            if doc.episodes[i] != doc.episodes[i + 1]:\n                continue\n"
                "            a, b = doc.sentences[i], doc.sentences[i + 1]\n"
                "            keep = bool(torch.rand((), generator=generator) < 0.5)\n"
                "            pairs.append((a, b, 0) if keep else (b, a, 1))\n" + _END}, "one pair each"),
]

HONEST = [
    Honest("random-random-seeded-from-generator", {
        0: "import random\nimport torch\n\ndef make_sop_pairs(documents, generator):\n"
           "    coin = random.Random(int(torch.randint(0, 2**62, (1,), generator=generator)))\n    out = []\n"
           "    for doc in documents:\n        s, e = doc.sentences, doc.episodes\n"
           "        for a, b, ea, eb in zip(s, s[1:], e, e[1:]):\n            if ea == eb:\n"
           "                out.append((b, a, 1) if coin.random() < 0.5 else (a, b, 0))\n    return out\n"}),
    Honest("positives-first-then-vectorised-flips", {
        0: "import torch\n\ndef _positives(documents):\n"
           "    return [(doc.sentences[i], doc.sentences[i + 1]) for doc in documents\n"
           "            for i in range(len(doc.sentences) - 1) if doc.episodes[i] == doc.episodes[i + 1]]\n\n"
           "def make_sop_pairs(documents, generator):\n    positives = _positives(documents)\n"
           "    swap = torch.randint(0, 2, (len(positives),), generator=generator).tolist()\n"
           "    return [(b, a, 1) if s else (a, b, 0) for (a, b), s in zip(positives, swap)]\n"}),
]
