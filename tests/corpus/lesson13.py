"""Exercise 13 (Unigram LM: Viterbi segmentation and marginal likelihood; BPE's encoder): wrong answers and
honest alternatives. Answer cells: 0 unigram_segment, 1 unigram_log_likelihood, 2 bpe_encode, 3 written."""
from . import Honest, Mistake

_SEG = "import math\n\ndef unigram_segment(word, log_probs, unk_token='[UNK]'):\n"
_LL = "import math\n\ndef unigram_log_likelihood(word, log_probs):\n"
_VITERBI = ("    n = len(word)\n    best = [0.0] + [-math.inf] * n\n    back = [0] * (n + 1)\n"
            "    for i in range(1, n + 1):\n        for j in range(i):\n            p = word[j:i]\n"
            "            if p in log_probs and best[j] + log_probs[p] > best[i]:\n"
            "                best[i], back[i] = best[j] + log_probs[p], j\n")
_BACKTRACK = ("    out, i = [], n\n    while i > 0:\n        out.append(word[back[i]:i])\n        i = back[i]\n"
              "    return out[::-1]\n")
_ALPHA = ("    n = len(word)\n    alpha = [0.0] + [-math.inf] * n\n    for i in range(1, n + 1):\n"
          "        terms = [alpha[j] + log_probs[word[j:i]] for j in range(i) if word[j:i] in log_probs]\n")

MISTAKES = [
    Mistake("13.unigram-viterbi", "greedy-longest-match",
            {0: _SEG + "    pieces, start = [], 0\n    while start < len(word):\n"
                "        for end in range(len(word), start, -1):\n            if word[start:end] in log_probs:\n"
                "                break\n        else:\n            return [unk_token]\n"
                "        pieces.append(word[start:end])\n        start = end\n    return pieces\n"},
            "greedy longest match"),
    Mistake("13.unigram-viterbi", "fewest-pieces",
            {0: _SEG + "    n = len(word)\n    best = [0] + [math.inf] * n\n    back = [0] * (n + 1)\n"
                "    for i in range(1, n + 1):\n        for j in range(i):\n"
                "            if word[j:i] in log_probs and best[j] + 1 < best[i]:\n"
                "                best[i], back[i] = best[j] + 1, j\n"
                "    if best[n] == math.inf:\n        return [unk_token]\n" + _BACKTRACK},
            "your score"),
    Mistake("13.unigram-viterbi", "product-of-probabilities-underflows",
            {0: _SEG + "    n = len(word)\n    best = [1.0] + [0.0] * n\n    back = [0] * (n + 1)\n"
                "    for i in range(1, n + 1):\n        for j in range(i):\n            p = word[j:i]\n"
                "            if p in log_probs and best[j] * math.exp(log_probs[p]) > best[i]:\n"
                "                best[i], back[i] = best[j] * math.exp(log_probs[p]), j\n"
                "    if best[n] == 0.0:\n        return [unk_token]\n" + _BACKTRACK},
            "very small log-probabilities"),
    Mistake("13.unigram-viterbi", "partial-segmentation-with-unk",
            {0: _SEG + "    n = len(word)\n    best = [0.0] + [-math.inf] * n\n    back = [0] * (n + 1)\n"
                "    for i in range(1, n + 1):\n        for j in range(i):\n"
                "            p = word[j:i]\n            lp = log_probs.get(p, -1e9 if i - j == 1 else None)\n"
                "            if lp is not None and best[j] + lp > best[i]:\n                best[i], back[i] = best[j] + lp, j\n"
                "    out, i = [], n\n    while i > 0:\n        p = word[back[i]:i]\n"
                "        out.append(p if p in log_probs else unk_token)\n        i = back[i]\n    return out[::-1]\n"},
            "no segmentation exists"),
    Mistake("13.unigram-viterbi", "last-character-dropped",
            {0: _SEG + "    n = len(word)\n    best = [0.0] + [-math.inf] * n\n    back = [0] * (n + 1)\n"
                "    for i in range(1, n):\n        for j in range(i):\n            p = word[j:i]\n"
                "            if p in log_probs and best[j] + log_probs[p] > best[i]:\n"
                "                best[i], back[i] = best[j] + log_probs[p], j\n"
                "    if best[n - 1] == -math.inf:\n        return [unk_token]\n"
                "    out, i = [], n - 1\n    while i > 0:\n        out.append(word[back[i]:i])\n        i = back[i]\n"
                "    return out[::-1] + [word[-1]]\n"},
            "worked example"),
    Mistake("13.unigram-likelihood", "max-instead-of-logsumexp",
            {1: _LL + _ALPHA + "        if terms:\n            alpha[i] = max(terms)\n    return alpha[n]\n"},
            "best segmentation's score"),
    Mistake("13.unigram-likelihood", "exp-outside-log-space",
            {1: _LL + _ALPHA + "        if terms:\n            alpha[i] = math.log(sum(math.exp(t) for t in terms)) "
                "if sum(math.exp(t) for t in terms) > 0 else -math.inf\n    return alpha[n]\n"},
            "exp underflow"),
    Mistake("13.unigram-likelihood", "sum-of-log-probs",
            {1: _LL + _ALPHA + "        if terms:\n            alpha[i] = sum(terms)\n    return alpha[n]\n"},
            "worked example"),
    Mistake("13.unigram-likelihood", "unknown-gives-zero",
            {1: _LL + _ALPHA + "        if terms:\n            top = max(terms)\n"
                "            alpha[i] = top + math.log(sum(math.exp(t - top) for t in terms))\n"
                "    return alpha[n] if alpha[n] > -math.inf else 0.0\n"},
            "no segmentation exists"),
    Mistake("13.bpe-encode", "greedy-longest-match-over-the-merged-vocabulary",
            {2: "def bpe_encode(word, merges):\n    vocab = set(word) | {a + b for a, b in merges}\n"
                "    pieces, start = [], 0\n    while start < len(word):\n"
                "        end = max(e for e in range(start + 1, len(word) + 1) if word[start:e] in vocab)\n"
                "        pieces.append(word[start:end])\n        start = end\n    return pieces\n"},
            "greedy longest match"),
    Mistake("13.bpe-encode", "first-occurrence-only",
            {2: "def bpe_encode(word, merges):\n    s = list(word)\n    for a, b in merges:\n"
                "        for i in range(len(s) - 1):\n            if s[i] == a and s[i + 1] == b:\n"
                "                s[i:i + 2] = [a + b]\n                break\n    return s\n"},
            "every occurrence"),
    Mistake("13.bpe-encode", "longest-merge-first",
            {2: "def bpe_encode(word, merges):\n    s = list(word)\n"
                "    for a, b in sorted(merges, key=lambda m: len(m[0] + m[1]), reverse=True):\n"
                "        out, i = [], 0\n        while i < len(s):\n"
                "            if i + 1 < len(s) and (s[i], s[i + 1]) == (a, b):\n"
                "                out.append(a + b)\n                i += 2\n"
                "            else:\n                out.append(s[i])\n                i += 1\n        s = out\n    return s\n"},
            "longest piece first"),
    Mistake("13.bpe-encode", "the-course-encoder-with-no-prefix",
            {2: "from course_lib.tokenization import bpe_encode_word\n\n"
                "def bpe_encode(word, merges):\n    return bpe_encode_word(word, merges, prefix='') if word else []\n"},
            "bpe_encode_word"),
    Mistake("13.bpe-encode", "str-replace-ignores-piece-boundaries",
            {2: "def bpe_encode(word, merges):\n    text = ' '.join(word)\n"
                "    for a, b in merges:\n        text = text.replace(a + ' ' + b, a + b)\n"
                "    return text.split(' ') if text else []\n"},
            "expected"),
]

HONEST = [
    Honest("recursive-memoised", {
        0: "from functools import lru_cache\n\ndef unigram_segment(word, log_probs, unk_token='[UNK]'):\n"
           "    @lru_cache(maxsize=None)\n    def best(i):\n        if i == len(word):\n            return 0.0, ()\n"
           "        options = []\n        for j in range(i + 1, len(word) + 1):\n"
           "            if word[i:j] in log_probs and best(j)[1] is not None:\n                s, rest = best(j)\n"
           "                options.append((log_probs[word[i:j]] + s, (word[i:j],) + rest))\n"
           "        return max(options, key=lambda o: o[0]) if options else (float('-inf'), None)\n"
           "    score, pieces = best(0)\n    return [unk_token] if pieces is None else list(pieces)\n",
        1: "import numpy as np\n\ndef unigram_log_likelihood(word, log_probs):\n"
           "    alpha = np.full(len(word) + 1, -np.inf)\n    alpha[0] = 0.0\n"
           "    for i in range(1, len(word) + 1):\n"
           "        terms = [alpha[j] + log_probs[word[j:i]] for j in range(i) if word[j:i] in log_probs]\n"
           "        if terms:\n            alpha[i] = np.logaddexp.reduce(np.array(terms))\n"
           "    return float(alpha[-1])\n"}),
    Honest("forward-pass-by-start", {
        0: "import math\n\ndef unigram_segment(word, log_probs, unk_token='[UNK]'):\n"
           "    n = len(word)\n    best = {0: (0.0, [])}\n"
           "    longest = max((len(p) for p in log_probs), default=0)\n"
           "    for i in range(n):\n        if i not in best:\n            continue\n"
           "        score, pieces = best[i]\n        for j in range(i + 1, min(n, i + longest) + 1):\n"
           "            p = word[i:j]\n            if p in log_probs:\n"
           "                cand = score + log_probs[p]\n"
           "                if j not in best or cand > best[j][0]:\n                    best[j] = (cand, pieces + [p])\n"
           "    return best[n][1] if n in best else [unk_token]\n",
        1: "import math\nimport torch\n\ndef unigram_log_likelihood(word, log_probs):\n"
           "    alpha = [torch.tensor(0.0, dtype=torch.float64)]\n"
           "    for i in range(1, len(word) + 1):\n"
           "        terms = [alpha[j] + log_probs[word[j:i]] for j in range(i) if word[j:i] in log_probs]\n"
           "        alpha.append(torch.logsumexp(torch.stack(terms), 0) if terms else torch.tensor(-math.inf, dtype=torch.float64))\n"
           "    return alpha[-1].item()\n",
        2: "def bpe_encode(word, merges):\n"
           "    # GPT-2 style: repeatedly merge the adjacent pair with the lowest rank (the earliest merge)\n"
           "    rank = {pair: r for r, pair in enumerate(merges)}\n    pieces = list(word)\n"
           "    while len(pieces) > 1:\n"
           "        pairs = [(rank.get((x, y), float('inf')), i) for i, (x, y) in enumerate(zip(pieces, pieces[1:]))]\n"
           "        best, i = min(pairs)\n        if best == float('inf'):\n            break\n"
           "        pieces[i:i + 2] = [pieces[i] + pieces[i + 1]]\n    return pieces\n"}),
    Honest("recursive-bpe-and-tuple-pieces", {
        2: "def _apply(pieces, a, b):\n    if len(pieces) < 2:\n        return pieces\n"
           "    if pieces[0] == a and pieces[1] == b:\n        return (a + b,) + _apply(pieces[2:], a, b)\n"
           "    return pieces[:1] + _apply(pieces[1:], a, b)\n\n"
           "def bpe_encode(word, merges):\n    pieces = tuple(word)\n    for a, b in merges:\n"
           "        pieces = _apply(pieces, a, b)\n    return pieces\n"}),
]
