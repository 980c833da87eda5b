"""Graded checks for lesson 13: BERT's greedy longest-match-first WordPiece encoder."""
import random

import torch

from ..grading import CheckFailed, exercise
from course_lib.tokenization import wordpiece as reference

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _python_rng(rng: torch.Generator) -> random.Random:
    return random.Random(int(torch.randint(2**62, (1,), generator=rng)))


def _random_vocab(r: random.Random, alphabet: str, n_pieces: int, drop=()):
    """Every character (alone and with ##) except those in `drop`, plus random pieces."""
    vocab = {c for c in alphabet if c not in drop} | {"##" + c for c in alphabet if c not in drop}
    allowed = "".join(c for c in alphabet if c not in drop)
    while len(vocab) < 2 * len(allowed) + n_pieces:
        piece = "".join(r.choice(allowed) for _ in range(r.randint(2, 5)))
        vocab.add(piece if r.random() < 0.5 else "##" + piece)
    # a dict token -> id (like vocab.txt) or a plain set: both support `in`
    return {t: i for i, t in enumerate(sorted(vocab))} if r.random() < 0.5 else vocab


def _random_word(r: random.Random, alphabet: str, vocab, max_len=12) -> str:
    """Half the time glue vocabulary pieces together, so that long matches exist."""
    if r.random() < 0.5:
        return "".join(r.choice(alphabet) for _ in range(r.randint(1, max_len)))
    pieces = [t.removeprefix("##") for t in vocab]
    return "".join(r.choice(pieces) for _ in range(r.randint(1, 4)))


def _shortest_first(word, vocab, unk):
    """The usual mistake: take the shortest matching piece instead of the longest."""
    pieces, start = [], 0
    while start < len(word):
        for end in range(start + 1, len(word) + 1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
        else:
            return [unk]
        pieces.append(piece)
        start = end
    return pieces


def _describe_vocab(vocab) -> str:
    tokens = sorted(vocab)
    shown = ", ".join(tokens[:40])
    return f"{{{shown}{', ...' if len(tokens) > 40 else ''}}} ({len(tokens)} tokens)"


def _compare(fn, word, vocab, case, unk_token="[UNK]", max_chars=100):
    kwargs = {}
    if unk_token != "[UNK]":
        kwargs["unk_token"] = unk_token
    if max_chars != 100:
        kwargs["max_chars"] = max_chars
    got = fn(word, vocab, **kwargs)
    expected = reference(word, vocab, unk_token, max_chars)
    if isinstance(got, tuple):
        got = list(got)
    if not isinstance(got, list):
        raise CheckFailed(f"[{case}] return a list of pieces, got {type(got).__name__}")
    if got == expected:
        return
    hint = ""
    if expected == [unk_token] and len(word) > max_chars:
        hint = f" - the word has {len(word)} characters, more than max_chars={max_chars}"
    elif expected == [unk_token] and unk_token in got and len(got) > 1:
        hint = (" - when no piece fits at some position, the *whole word* becomes "
                f"[{unk_token!r}], not a partial segmentation")
    elif expected == [unk_token] and "".join(p.removeprefix("##") for p in got) == word:
        hint = (" - WordPiece is greedy and never backtracks: after taking the longest piece it does "
                "not go back to try a shorter one, so here it gets stuck and the word is unknown")
    elif expected == [unk_token]:
        hint = f" - an unknown word must come back as [{unk_token!r}] (the unk_token argument)"
    elif got == [unk_token] and len(word) == max_chars:
        hint = (f" - a word of exactly max_chars={max_chars} characters is allowed: only longer words "
                "are unknown")
    elif got == [unk_token]:
        hint = (" - a piece fits at every position here: the first piece is looked up without '##', "
                "every later one with it")
    elif got == _shortest_first(word, vocab, unk_token):
        hint = " - you take the shortest matching piece; WordPiece takes the longest"
    elif any(not p.startswith("##") for p in got[1:]):
        hint = " - pieces after the first must carry the '##' prefix (and be looked up with it)"
    raise CheckFailed(f"[{case}] word {_short(word)}, vocab {_describe_vocab(vocab)}: expected "
                      f"{_short(expected)}, got {_short(got)}{hint}")


def _short(value) -> str:
    """repr, shortened for 100-character words and their long segmentations."""
    if isinstance(value, str) and len(value) > 40:
        return f"{value[:20]!r}... ({len(value)} characters)"
    if isinstance(value, list) and len(value) > 12:
        return f"{value[:6]!r}... ({len(value)} pieces)"
    return repr(value)


@exercise("13.wordpiece-greedy", points=2, uses="wordpiece_encode")
def check_greedy(fn, rng):
    """Known words on random vocabularies: the longest piece first, '##' after the first."""
    _compare(fn, "unaffable", {"un", "##aff", "##able", "u", "##n", "##a", "##f", "##b", "##l", "##e"},
             "BERT's docstring example")
    # The first piece must not carry ##, the later ones must: "ab" is only in the vocabulary as "##ab".
    _compare(fn, "cab", {"c", "##c", "a", "##a", "b", "##b", "ab", "##ab", "ca"}, "'##' prefixes")
    r = _python_rng(rng)
    for case in range(40):
        alphabet = "".join(r.sample(LETTERS, r.randint(2, 5)))
        vocab = _random_vocab(r, alphabet, n_pieces=r.randint(3, 25))
        _compare(fn, _random_word(r, alphabet, vocab), vocab, f"random case {case}")


@exercise("13.wordpiece-unknown", points=2, uses="wordpiece_encode")
def check_unknown(fn, rng):
    """Unknown words become [unk_token] as a whole, with no backtracking."""
    # Greedy takes "ab", then "##c", then finds nothing for "d": the word is unknown, although
    # "a" + "##bcd" would have worked. BERT does not backtrack.
    _compare(fn, "abcd", {"a", "ab", "##c", "##bcd"}, "no backtracking")
    _compare(fn, "xyz", {"x", "##y"}, "custom unk_token", unk_token="<unk>")
    r = _python_rng(rng)
    for case in range(30):
        alphabet = "".join(r.sample(LETTERS, r.randint(3, 6)))
        missing = r.choice(alphabet)
        vocab = _random_vocab(r, alphabet, n_pieces=r.randint(3, 20), drop=missing)
        word = list(_random_word(r, alphabet.replace(missing, ""), vocab) or "a")
        word.insert(r.randint(0, len(word)), missing)        # one character the vocabulary lacks
        unk = r.choice(["[UNK]", "<unk>", "??"])
        _compare(fn, "".join(word), vocab, f"random unknown word {case}", unk_token=unk)


@exercise("13.wordpiece-max-chars", points=1, uses="wordpiece_encode")
def check_max_chars(fn, rng):
    """Words longer than max_chars become [unk_token]; a word of exactly max_chars does not."""
    vocab = {"a", "##a", "aa", "##aa"}
    _compare(fn, "a" * 101, vocab, "101 characters, default max_chars=100")
    _compare(fn, "a" * 100, vocab, "exactly 100 characters (allowed)")
    r = _python_rng(rng)
    for case in range(10):
        limit = r.randint(3, 30)
        length = limit + r.choice([-1, 0, 1, 5])
        alphabet = "".join(r.sample(LETTERS, 3))
        vocab = _random_vocab(r, alphabet, n_pieces=10)
        word = "".join(r.choice(alphabet) for _ in range(max(length, 1)))
        _compare(fn, word, vocab, f"max_chars={limit}, a word of {len(word)} characters",
                 unk_token=r.choice(["[UNK]", "<unk>"]), max_chars=limit)
