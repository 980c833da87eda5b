"""Graded checks for lesson 13: the Unigram language model's segmentation (Viterbi) and its marginal
likelihood (log-sum-exp over all segmentations), and BPE's own encoder (its merges replayed in order, which
BERT's greedy longest match does not reproduce). The references are written here."""
import math
import numbers
import random

import torch

from ..grader.authoring import CheckFailed, exercise, randint, written

LETTERS = "abcdefghijklmnopqrstuvwxyz"
UNICODE = "éàüöçñßøαβγδεζλ中文字词语句"
HELLO = {"h": -5.0, "e": -5.0, "l": -4.0, "o": -4.0, "he": -3.0, "ll": -6.0, "hell": -9.0, "lo": -2.5,
         "llo": -7.0, "hello": -12.0}
_SHORTCUTS = ("sentencepiece:SentencePieceProcessor", "tokenizers.models:Unigram", "tokenizers:Tokenizer",
              "course_lib.tokenization:wordpiece", "course_lib.tokenization:WordPieceTokenizer",
              "course_lib.tokenization:BPETokenizer")


def viterbi_reference(word, log_probs, unk_token="[UNK]"):
    n = len(word)
    best, start_of = [0.0] + [-math.inf] * n, [0] * (n + 1)
    for i in range(1, n + 1):
        for j in range(i):
            piece = word[j:i]
            if piece in log_probs and best[j] + log_probs[piece] > best[i]:
                best[i], start_of[i] = best[j] + log_probs[piece], j
    if best[n] == -math.inf:
        return [unk_token]
    pieces, i = [], n
    while i > 0:
        pieces.append(word[start_of[i]:i])
        i = start_of[i]
    return pieces[::-1]


def likelihood_reference(word, log_probs):
    n = len(word)
    alpha = [0.0] + [-math.inf] * n
    for i in range(1, n + 1):
        terms = [alpha[j] + log_probs[word[j:i]] for j in range(i) if word[j:i] in log_probs and alpha[j] > -math.inf]
        if terms:
            top = max(terms)
            alpha[i] = top + math.log(sum(math.exp(t - top) for t in terms))
    return alpha[n]


def _greedy(word, log_probs, unk):
    """BERT-style greedy longest match (no ##): the usual wrong transfer from WordPiece."""
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            if word[start:end] in log_probs:
                break
        else:
            return [unk]
        pieces.append(word[start:end])
        start = end
    return pieces


def _score(pieces, log_probs):
    return sum(log_probs[p] for p in pieces)


def _python_rng(rng):
    return random.Random(randint(rng, 0, 2**62))


def _vocab(r, alphabet, n_pieces, low=-12.0, high=-0.5, drop=""):
    """Every character except `drop`, plus random multi-character pieces, with random log-probs."""
    allowed = "".join(c for c in alphabet if c not in drop)
    pieces = set(allowed)
    while len(pieces) < len(allowed) + n_pieces:
        pieces.add("".join(r.choice(allowed) for _ in range(r.randint(2, 5))))
    return {p: r.uniform(low, high) for p in sorted(pieces)}


def _word(r, alphabet, vocab, max_len=12):
    if r.random() < 0.5:
        return "".join(r.choice(alphabet) for _ in range(r.randint(1, max_len)))
    return "".join(r.choice(list(vocab)) for _ in range(r.randint(1, 4)))


def _show(vocab):
    items = [f"{p!r}: {v:.3g}" for p, v in list(vocab.items())[:14]]
    return "{" + ", ".join(items) + (", ..." if len(vocab) > 14 else "") + f"}} ({len(vocab)} pieces)"


def _compare_segment(fn, word, vocab, case, unk="[UNK]"):
    got = fn(word, dict(vocab)) if unk == "[UNK]" else fn(word, dict(vocab), unk_token=unk)
    expected = viterbi_reference(word, vocab, unk)
    if isinstance(got, (tuple, list)):
        got = list(got)                       # a plain list (a list subclass's __eq__ is not trusted)
    if not isinstance(got, list):
        raise CheckFailed(f"[{case}] return a list of pieces, got {type(got).__name__}")
    if got == expected:
        return
    valid = (expected != [unk] and all(isinstance(p, str) and p in vocab for p in got) and "".join(got) == word)
    if valid and math.isclose(_score(got, vocab), _score(expected, vocab), rel_tol=1e-9, abs_tol=1e-9):
        return                                # a tie: the same pieces in another order scores the same
    hint = ""
    if expected == [unk]:
        hint = (f" - no segmentation exists (a character that no piece covers): return [{unk!r}]"
                if unk in got or "".join(map(str, got)) != word else f" - return [{unk!r}] when nothing covers the word")
    elif got == [unk]:
        hint = " - a segmentation exists: every character is covered by some piece"
    elif all(isinstance(p, str) for p in got) and "".join(got) == word and all(p in vocab for p in got):
        if got == _greedy(word, vocab, unk):
            hint = (" - that is the greedy longest match (BERT's WordPiece encoder): the Unigram model takes the "
                    "segmentation with the highest total log-probability, found by dynamic programming")
        elif len(got) < len(expected):
            hint = " - fewer pieces is not the rule: the highest total log-probability is"
        hint = (f" (your score {_score(got, vocab):.6g}, the best {_score(expected, vocab):.6g})" + hint)
    elif all(isinstance(p, str) for p in got) and "".join(got) != word:
        hint = " - the pieces must spell the whole word, in order"
    raise CheckFailed(f"[{case}] word {word!r}, log_probs {_show(vocab)}: expected {expected}, got {got}{hint}")


@exercise("13.unigram-viterbi", points=2, uses="unigram_segment", forbids=_SHORTCUTS)
def check_viterbi(fn, rng):
    """The most probable segmentation (Viterbi), [unk_token] when none, on random vocabularies."""
    _compare_segment(fn, "hello", HELLO, "worked example")
    _compare_segment(fn, "", HELLO, "the empty word")
    _compare_segment(fn, "h", HELLO, "a one-letter word")
    _compare_segment(fn, "help", HELLO, "an unknown character 'p'", unk="<unk>")
    r = _python_rng(rng)
    for case in range(40):
        alphabet = "".join(r.sample(UNICODE if case % 4 == 3 else LETTERS, r.randint(2, 5)))
        vocab = _vocab(r, alphabet, r.randint(3, 25))
        _compare_segment(fn, _word(r, alphabet, vocab), vocab, f"random case {case}")
    for case in range(10):
        alphabet = "".join(r.sample(LETTERS, r.randint(3, 5)))
        vocab = _vocab(r, alphabet, r.randint(5, 20), low=-800.0, high=-300.0)
        _compare_segment(fn, _word(r, alphabet, vocab), vocab,
                         f"very small log-probabilities (-800 .. -300; products of probabilities underflow) {case}")
    for case in range(10):
        alphabet = "".join(r.sample(LETTERS, r.randint(3, 6)))
        missing = r.choice(alphabet)
        vocab = _vocab(r, alphabet, r.randint(3, 15), drop=missing)
        word = list(_word(r, alphabet.replace(missing, ""), vocab))
        word.insert(r.randint(0, len(word)), missing)
        _compare_segment(fn, "".join(word), vocab, f"unknown character {missing!r}, case {case}",
                         unk=r.choice(["[UNK]", "<unk>", "??"]))


def _compare_likelihood(fn, word, vocab, case):
    got = fn(word, dict(vocab))
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        raise CheckFailed(f"[{case}] return a float, got {type(got).__name__}")
    got, expected = float(got), likelihood_reference(word, vocab)
    if expected == -math.inf or got == -math.inf:
        if got != expected:
            raise CheckFailed(f"[{case}] word {word!r}, log_probs {_show(vocab)}: expected {expected}, got {got}"
                              + (" - no segmentation exists: the probability is 0, the log -inf" if expected == -math.inf
                                 else " - exp underflowed? stay in log space (log-sum-exp)"))
        return
    if not math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-9):
        hint = ""
        if math.isnan(got):
            hint = " - NaN: exp underflowed or -inf - -inf? stay in log space (log-sum-exp)"
        elif expected != 0 and math.isclose(got, _score(viterbi_reference(word, vocab), vocab), rel_tol=1e-9):
            hint = (" - that is the best segmentation's score (a max): the likelihood sums the probabilities "
                    "of all segmentations (log-sum-exp)")
        raise CheckFailed(f"[{case}] word {word!r}, log_probs {_show(vocab)}: expected {expected:.10g}, "
                          f"got {got:.10g}{hint}")


@exercise("13.unigram-likelihood", points=1, uses="unigram_log_likelihood", forbids=_SHORTCUTS)
def check_likelihood(fn, rng):
    """log of the sum over all segmentations, in log space; -inf when none."""
    _compare_likelihood(fn, "hello", HELLO, "worked example")
    _compare_likelihood(fn, "", HELLO, "the empty word (log 1 = 0)")
    _compare_likelihood(fn, "o", HELLO, "a one-letter word")
    _compare_likelihood(fn, "help", HELLO, "an unknown character 'p'")
    r = _python_rng(rng)
    for case in range(25):
        alphabet = "".join(r.sample(UNICODE if case % 4 == 3 else LETTERS, r.randint(2, 4)))
        vocab = _vocab(r, alphabet, r.randint(3, 20))
        _compare_likelihood(fn, _word(r, alphabet, vocab), vocab, f"random case {case}")
    for case in range(8):
        alphabet = "".join(r.sample(LETTERS, r.randint(2, 4)))
        vocab = _vocab(r, alphabet, r.randint(5, 15), low=-800.0, high=-300.0)
        _compare_likelihood(fn, _word(r, alphabet, vocab), vocab,
                            f"very small log-probabilities (-800 .. -300; exp underflows) {case}")


# ---------------------------------------------------------------- 13.bpe-encode: BPE replays its merges

def bpe_reference(word, merges):
    symbols = list(word)
    for a, b in merges:
        symbols = _merge_once(symbols, a, b)
    return symbols


def _greedy_over_merges(word, merges):
    """BERT-style greedy longest match over the same vocabulary (characters + merged pieces), no ##."""
    vocab = set(word) | {a + b for a, b in merges}
    return _greedy(word, vocab, "[UNK]")


def _first_occurrence_only(word, merges):
    symbols = list(word)
    for a, b in merges:
        for i in range(len(symbols) - 1):
            if symbols[i] == a and symbols[i + 1] == b:
                symbols[i:i + 2] = [a + b]
                break
    return symbols


def _longest_merge_first(word, merges):
    return bpe_reference(word, sorted(merges, key=lambda m: -len(m[0] + m[1])))


_BPE_HINTS = (
    (_greedy_over_merges, "that is BERT's greedy longest match over the same vocabulary; BPE replays its merges "
                          "in the order it learned them, and an early merge can block a longer piece"),
    (_first_occurrence_only, "each merge applies to every occurrence of its pair in the word, not only the first"),
    (_longest_merge_first, "the merges were applied longest piece first; BPE applies them in the order they were "
                           "learned"),
)


def train_merges(words, n_merges):
    """BPE training on `words` (a word -> count dict): the most frequent adjacent pair, ties to the smallest
    pair; a pair whose merged string already exists is skipped (every piece is built once)."""
    segs = {w: list(w) for w in words}
    symbols = {c for w in words for c in w}
    merges = []
    for _ in range(n_merges):
        counts = {}
        for w, s in segs.items():
            for pair in zip(s, s[1:]):
                counts[pair] = counts.get(pair, 0) + words[w]
        candidates = sorted((p for p in counts if p[0] + p[1] not in symbols), key=lambda p: (-counts[p], p))
        if not candidates:
            break
        a, b = candidates[0]
        merges.append((a, b))
        symbols.add(a + b)
        segs = {w: _merge_once(s, a, b) for w, s in segs.items()}
    return merges


def _merge_once(symbols, a, b):
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def _compare_bpe(fn, word, merges, case):
    got = fn(word, [tuple(m) for m in merges])
    if isinstance(got, tuple):
        got = list(got)
    if not isinstance(got, list):
        raise CheckFailed(f"[{case}] return a list of pieces, got {type(got).__name__}")
    expected = bpe_reference(word, merges)
    if got == expected:
        return
    shown = f"word {word!r}, merges {merges if len(merges) <= 12 else merges[:12] + ['...']}"
    hint = ""
    if all(isinstance(p, str) for p in got) and "".join(got) != word:
        hint = " - the pieces must spell the whole word, in order"
    else:
        hint = next((f" - {why}" for variant, why in _BPE_HINTS if variant(word, merges) == got), "")
    raise CheckFailed(f"[{case}] {shown}: expected {expected}, got {got}{hint}")


@exercise("13.bpe-encode", points=2, uses="bpe_encode", forbids=_SHORTCUTS + (
        "course_lib.tokenization:bpe_encode_word",
        "course_lib.tokenization:train_bpe", "course_lib.tokenization:train_wordpiece"))
def check_bpe_encode(fn, rng):
    """BPE's own segmentation: its merges replayed in order, on merges trained on hidden random corpora."""
    _compare_bpe(fn, "abc", [("b", "c"), ("a", "b")], "worked example")
    lower = [("l", "o"), ("lo", "w"), ("e", "r"), ("low", "er")]
    _compare_bpe(fn, "lower", lower, "a merge built from earlier merges")
    _compare_bpe(fn, "lowest", lower, "a word only partly covered by the merges")
    _compare_bpe(fn, "aaa", [("a", "a")], "overlapping occurrences: left to right")
    _compare_bpe(fn, "aaaaa", [("a", "a"), ("aa", "aa")], "repeated pairs")
    _compare_bpe(fn, "x", lower, "one character")
    _compare_bpe(fn, "", lower, "the empty word")
    r = _python_rng(rng)
    for case in range(25):
        alphabet = "".join(r.sample(UNICODE if case % 5 == 4 else LETTERS, r.randint(2, 5)))
        stems = ["".join(r.choice(alphabet) for _ in range(r.randint(2, 4))) for _ in range(4)]
        corpus = {}
        for _ in range(r.randint(4, 12)):
            w = "".join(r.choice(stems) for _ in range(r.randint(1, 3)))
            corpus[w] = corpus.get(w, 0) + r.randint(1, 20)
        merges = train_merges(corpus, r.randint(3, 20))
        word = r.choice(list(corpus)) if case % 2 else "".join(r.choice(stems + list(alphabet)) for _ in range(r.randint(1, 5)))
        _compare_bpe(fn, word, merges, f"random corpus {case} ({len(merges)} merges)")


written("13.written", points=2, rubric=(
    "both learn bottom-up from characters by merging adjacent pairs: BPE merges the most frequent pair; "
    "WordPiece (as usually described) the pair with the highest f(ab) / (f(a) f(b)), which favours pairs of rare "
    "symbols (the likelihood-gain description is a different rule: say which one you mean)",
    "they encode differently: BPE replays its merges in the learned order; BERT's WordPiece ignores the merges "
    "and takes the longest vocabulary piece from the left (## marks a continuation), and a word with no "
    "matching piece becomes [UNK] as a whole",
    "subwords make unknown tokens almost disappear (only a character never seen in training gives [UNK]; a "
    "word-level vocabulary of the same size misses several percent of held-out words), at the price of more "
    "tokens per word",
    "ULM (unigram language model) goes the other way: a probability per piece, start from a large vocabulary and "
    "prune the pieces that cost the least likelihood; segment by the most probable segmentation (Viterbi), and "
    "segmentations can be sampled (subword regularisation; SentencePiece: T5, ALBERT, XLNet)",
))
