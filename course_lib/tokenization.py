"""BERT's tokenizer, and the BPE and WordPiece trainers (lessons 13-14).

Why one module: lesson 13's comparison: BERT's tokenizer and the BPE and WordPiece trainers side by side, so a
learner reads them together; both trainers share one merge loop (`_MergeState`) and BERT's normaliser, and the
lesson imports all three from this one module.

Three layers, as in Hugging Face `tokenizers`:

1. `basic_tokenize(text)`: BERT's normaliser and pre-tokeniser. Drop control characters,
   turn every kind of whitespace into " ", put spaces around CJK ideographs, strip accents
   (NFD, then drop non-spacing marks), lower-case, and split on whitespace and punctuation.
2. `wordpiece(word, vocab)`: greedy longest-match-first segmentation of one word, with "##"
   marking a piece that continues a word; one unknown piece turns the whole word into [UNK].
3. `WordPieceTokenizer.encode`: `[CLS] A [SEP] B [SEP]` packing, segment ids and truncation.

The trainers learn a vocabulary from text. Both start from characters (a word's first
character as is, the others with the "##" prefix) and merge one adjacent pair at a time;
they differ only in which pair they merge:

- BPE: the most frequent pair.
- WordPiece: the pair with the highest freq(ab) / (freq(a) * freq(b)), i.e. the pair whose
  parts occur together far more often than their own frequencies predict.

(Hugging Face's own `WordPieceTrainer` merges by frequency, like BPE. The score rule is the one
Hugging Face teaches in its course; Google and Schuster & Nakajima describe WordPiece as the merge
that most increases the training data's likelihood - lesson 13 compares all three.)
"""
from __future__ import annotations

import functools
import heapq
import numbers
import operator
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path

from .validation import refuse_one_text, require_choice, require_int, require_str, require_texts

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PREFIX = "##"
MAX_INPUT_CHARS_PER_WORD = 100

# ---------------------------------------------------------------------------------------------
# 1. The basic tokenizer (normalise, then split into words and punctuation)
# ---------------------------------------------------------------------------------------------

# Rust's `char::is_whitespace` (the Unicode White_Space property). Hugging Face's normaliser
# uses it, so U+2028 (line separator) counts as a space although it is not category "Zs".
_WHITESPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
                        + "".join(chr(c) for c in range(0x2000, 0x200B)))


@functools.lru_cache(maxsize=None)
def _is_control(char: str) -> bool:
    """Characters BERT deletes: control, format (e.g. zero-width space), private use.

    Tab, newline and carriage return are whitespace instead. Unassigned code points (Cn)
    are kept, as Hugging Face's Rust normaliser does (they end up as [UNK]).
    """
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in ("Cc", "Cf", "Co", "Cs")


@functools.lru_cache(maxsize=None)
def _is_punctuation(char: str) -> bool:
    """Unicode punctuation (P*) plus every non-alphanumeric printable ASCII symbol.

    The ASCII ranges make "$", "+", "<", "^", "`" and "|" split off like punctuation,
    although Unicode files them as symbols (S*).
    """
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(cp: int) -> bool:
    """CJK Unified Ideographs (the ranges of BERT's `_is_chinese_char`, as Hugging Face has
    them). Hangul, Hiragana and Katakana are not included: those scripts use spaces."""
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B920 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


# ASCII needs no Unicode look-ups: drop control codes, tab/newline/return become spaces.
_ASCII_CLEAN = {c: None for c in [*range(32), 127] if chr(c) not in "\t\n\r"}
_ASCII_CLEAN.update({ord(c): " " for c in "\t\n\r"})


def normalize(text: str, lowercase: bool = True, strip_accents: bool | None = None) -> str:
    """BERT's normaliser; `strip_accents=None` means "strip when lower-casing" (as in BERT)."""
    require_str("text", text)
    if text.isascii():  # a fast path with the same result
        text = text.translate(_ASCII_CLEAN)
        return text.lower() if lowercase else text
    chars = []
    for char in text:
        if char in ("\x00", "\ufffd") or _is_control(char):
            continue
        if char in _WHITESPACE:
            chars.append(" ")
        elif _is_cjk(ord(char)):
            chars.append(f" {char} ")  # every ideograph becomes its own word
        else:
            chars.append(char)
    text = "".join(chars)
    if strip_accents or (strip_accents is None and lowercase):
        text = "".join(c for c in unicodedata.normalize("NFD", text)
                       if unicodedata.category(c) != "Mn")
    if lowercase:
        # Character by character, as Hugging Face does: str.lower() would turn a final
        # capital sigma into "ς", which the vocabulary spells "σ".
        text = "".join(c.lower() for c in text)
    return text


def pre_tokenize(text: str) -> list[str]:
    """Split normalised text on spaces and around every punctuation character."""
    words = []
    for chunk in text.split(" "):
        if chunk.isalnum():  # the common case: a plain word
            words.append(chunk)
            continue
        if chunk.isascii():
            words += [w for w in re.split(r"([!-/:-@\[-`{-~])", chunk) if w]
            continue
        current = ""
        for char in chunk:
            if _is_punctuation(char):
                if current:
                    words.append(current)
                words.append(char)
                current = ""
            else:
                current += char
        if current:
            words.append(current)
    return words


def basic_tokenize(text: str, lowercase: bool = True) -> list[str]:
    """Words and punctuation as BERT's basic tokenizer returns them."""
    return pre_tokenize(normalize(text, lowercase=lowercase))


# ---------------------------------------------------------------------------------------------
# 2. Greedy longest-match-first WordPiece
# ---------------------------------------------------------------------------------------------

def wordpiece(word: str, vocab: Mapping[str, int] | set[str], unk_token: str = "[UNK]",
              max_input_chars_per_word: int = MAX_INPUT_CHARS_PER_WORD) -> list[str]:
    """Split one word into the longest vocabulary pieces, left to right.

    "unaffable" -> ["un", "##aff", "##able"]. If some position has no matching piece, or the
    word is longer than `max_input_chars_per_word`, the whole word becomes [unk_token]:
    BERT never emits a partial segmentation.
    """
    if isinstance(vocab, (str, PathLike)):    # `piece in "vocab.txt"` would test substrings of the path
        raise ValueError(f"vocab: expected a dict token -> id or a set of tokens, got a path "
                         f"{str(vocab)!r:.60}: read it with load_vocab(path)")
    if len(word) > max_input_chars_per_word:
        return [unk_token]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else PREFIX + word[start:end]
            if piece in vocab:
                break
            end -= 1
        if end == start:  # not even a single character matched
            return [unk_token]
        pieces.append(piece)
        start = end
    return pieces


def _require_in_vocab(name: str, token: str, vocab: Mapping[str, int]) -> None:
    if token not in vocab:
        raise ValueError(f"{name}: expected a token of the vocabulary ({len(vocab)} tokens), got "
                         f"{token!r} (pass {name}=... naming the vocabulary's own)")


def load_vocab(vocab: str | PathLike | Mapping[str, int] | Sequence[str]) -> dict[str, int]:
    """token -> id from a vocab.txt path (one token a line, id = line number), a dict or a list."""
    if isinstance(vocab, (str, PathLike)):
        path = Path(vocab)
        if not path.is_file():        # a vocabulary's text ("[PAD]\n[UNK]...") passed as a str
            raise FileNotFoundError(f"vocab: expected a path to a vocab.txt file, got {str(vocab)!r:.60}, "
                                    f"which is no file (a list of tokens or a dict token -> id work too)")
        lines = path.read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return {token: i for i, token in enumerate(lines)}
    if isinstance(vocab, Mapping):
        return dict(vocab)
    tokens = list(vocab)
    out = {token: i for i, token in enumerate(tokens)}
    if len(out) != len(tokens):  # a repeated token would keep only its last id, a gap at the first
        raise ValueError(f"vocab: expected distinct tokens, got "
                         f"{[t for t, n in Counter(tokens).items() if n > 1][:3]} more than once")
    return out


class WordPieceTokenizer:
    """BERT's tokenizer: basic tokenization, WordPiece, and `[CLS] A [SEP] B [SEP]` packing.

    vocab: a path to a vocab.txt, a dict token -> id, or a list of tokens (id = index).
    max_position_embeddings: when given, `encode` refuses (ValueError) to produce more ids than
    the model has positions, instead of handing the model an index it cannot embed.
    Special tokens ([CLS], [MASK], ...) written in the text are kept whole, as in Hugging Face.
    """

    def __init__(self, vocab, lowercase: bool = True, unk_token: str = "[UNK]",
                 cls_token: str = "[CLS]", sep_token: str = "[SEP]", pad_token: str = "[PAD]",
                 mask_token: str = "[MASK]", max_position_embeddings: int | None = None,
                 max_input_chars_per_word: int = MAX_INPUT_CHARS_PER_WORD):
        self.vocab = load_vocab(vocab)
        self.ids_to_tokens = {i: t for t, i in self.vocab.items()}
        self.lowercase = lowercase
        self.unk_token, self.cls_token, self.sep_token = unk_token, cls_token, sep_token
        self.pad_token, self.mask_token = pad_token, mask_token
        for name in ("unk_token", "cls_token", "sep_token", "pad_token", "mask_token"):
            _require_in_vocab(name, getattr(self, name), self.vocab)
        self.max_position_embeddings = max_position_embeddings
        self.max_input_chars_per_word = max_input_chars_per_word
        self._pieces_cache: dict[str, list[str]] = {}  # word -> pieces; words repeat a lot
        specials = sorted(self.special_tokens, key=len, reverse=True)
        self._special_re = re.compile("(" + "|".join(re.escape(t) for t in specials) + ")")

    # -- vocabulary ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.vocab)

    @property
    def special_tokens(self) -> list[str]:
        return [self.pad_token, self.unk_token, self.cls_token, self.sep_token, self.mask_token]

    @property
    def special_ids(self) -> list[int]:
        return [self.vocab[t] for t in self.special_tokens]

    @property
    def pad_token_id(self) -> int:
        return self.vocab[self.pad_token]

    @property
    def mask_token_id(self) -> int:
        return self.vocab[self.mask_token]

    @property
    def cls_token_id(self) -> int:
        return self.vocab[self.cls_token]

    @property
    def sep_token_id(self) -> int:
        return self.vocab[self.sep_token]

    @property
    def unk_token_id(self) -> int:
        return self.vocab[self.unk_token]

    def convert_tokens_to_ids(self, tokens: str | Iterable[str]):
        unk = self.unk_token_id
        if isinstance(tokens, str):
            if len(tokens.split()) > 1:      # a text would silently come back as [UNK]
                raise ValueError(f"tokens: expected one token (or a list of tokens), got a text "
                                 f"{tokens!r:.40}: tokenize it first, tokenizer.tokenize(text)")
            return self.vocab.get(tokens, unk)
        return [self.vocab.get(t, unk) for t in tokens]

    def convert_ids_to_tokens(self, ids: int | Iterable[int]):
        """One id (an int, a numpy int, a 0-d tensor) or a list of them; a float id is refused
        (TypeError) rather than truncated."""
        if isinstance(ids, numbers.Integral) and not isinstance(ids, bool):
            return self._token(int(ids))
        if hasattr(ids, "dim") and ids.dim() == 0:          # a 0-d tensor: one id
            return self.convert_ids_to_tokens(ids.item())
        return [self._token(operator.index(i)) for i in ids]

    def _token(self, id_: int) -> str:
        """The token of one id (an int)."""
        token = self.ids_to_tokens.get(id_)
        if token is None:                   # not None in the text
            raise ValueError(f"ids: expected ids of the vocabulary ({len(self.vocab)} tokens), got {id_}")
        return token

    # -- text -> tokens -----------------------------------------------------------------------
    def tokenize(self, text: str) -> list[str]:
        require_str("text", text)
        tokens = []
        for part in self._special_re.split(text):
            if part in self.special_tokens:
                tokens.append(part)
                continue
            for word in basic_tokenize(part, lowercase=self.lowercase):
                pieces = self._pieces_cache.get(word)
                if pieces is None:
                    pieces = wordpiece(word, self.vocab, self.unk_token,
                                       self.max_input_chars_per_word)
                    if len(self._pieces_cache) < 1_000_000:
                        self._pieces_cache[word] = pieces
                tokens += pieces
        return tokens

    def encode(self, text: str, text_pair: str | None = None, max_length: int | None = None,
               padding: int | None = None) -> dict[str, list[int]]:
        """`[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]` as `input_ids`, `token_type_ids` (0 for
        [CLS] A [SEP], 1 for B [SEP]) and `attention_mask` (all 1, or 0 on padding).

        max_length truncates, longest first, exactly as Hugging Face's fast tokenizers do:
        with a budget m = max_length - specials, a pair that does not fit keeps the shorter
        side whole when it takes at most half of m and cuts the longer side to the rest;
        otherwise both are cut to m // 2, the longer one (the second on a tie) getting the odd
        token. `padding=N` pads with [PAD] up to N ids.
        """
        if text_pair is not None:           # (tokenize checks that text is a str)
            require_str("text_pair", text_pair)
        a = self.convert_tokens_to_ids(self.tokenize(text))
        # text_pair="" is an empty second segment ([CLS] A [SEP] [SEP]); Hugging Face treats
        # an empty string like None. Only None means "no pair" here.
        b = None if text_pair is None else self.convert_tokens_to_ids(self.tokenize(text_pair))
        n_special = 2 if b is None else 3
        if max_length is not None:
            if max_length < n_special:
                raise ValueError(f"max_length={max_length} is below the {n_special} special "
                                 f"tokens that {'a pair' if b else 'one text'} needs")
            if self.max_position_embeddings and max_length > self.max_position_embeddings:
                raise ValueError(f"max_length={max_length} exceeds max_position_embeddings="
                                 f"{self.max_position_embeddings}")
            a, b = truncate_longest_first(a, b, max_length - n_special)
        cls, sep = self.cls_token_id, self.sep_token_id
        input_ids = [cls] + a + [sep]
        token_type_ids = [0] * len(input_ids)
        if b is not None:
            input_ids += b + [sep]
            token_type_ids += [1] * (len(b) + 1)
        limit = self.max_position_embeddings
        if limit is not None and len(input_ids) > limit:
            raise ValueError(f"text: encodes to {len(input_ids)} ids, more than "
                             f"max_position_embeddings={limit}; pass max_length={limit} "
                             f"to truncate")
        attention_mask = [1] * len(input_ids)
        if padding is not None and padding > len(input_ids):
            extra = padding - len(input_ids)
            input_ids += [self.pad_token_id] * extra
            token_type_ids += [0] * extra
            attention_mask += [0] * extra
        return {"input_ids": input_ids, "token_type_ids": token_type_ids,
                "attention_mask": attention_mask}

    def __call__(self, texts: str | Sequence[str], text_pairs=None, max_length: int | None = None,
                 return_tensors: str | None = "pt"):
        """Encode a batch, pad to its longest sequence, and return tensors (B, T)."""
        import torch

        require_choice("return_tensors", return_tensors, ("pt", None))      # tensors or lists
        if isinstance(texts, str):
            texts = [texts]
            text_pairs = None if text_pairs is None else [require_str("text_pairs", text_pairs)]
        texts = require_texts("texts", texts)
        # a list of texts pairs with a list: one str would pair each text with one character
        pairs = [None] * len(texts) if text_pairs is None else require_texts("text_pairs", text_pairs)
        if len(pairs) != len(texts):
            raise ValueError(f"text_pairs: expected {len(texts)} texts like texts, "
                             f"got {len(pairs)}")
        encodings = [self.encode(t, p, max_length=max_length) for t, p in zip(texts, pairs)]
        longest = max(len(e["input_ids"]) for e in encodings)
        padded = [self._pad(e, longest) for e in encodings]
        keys = ("input_ids", "token_type_ids", "attention_mask")
        batch = {k: [e[k] for e in padded] for k in keys}
        if return_tensors == "pt":
            batch = {k: torch.tensor(v, dtype=torch.long) for k, v in batch.items()}
        return batch

    def _pad(self, encoding: dict, length: int) -> dict:
        extra = length - len(encoding["input_ids"])
        return {"input_ids": encoding["input_ids"] + [self.pad_token_id] * extra,
                "token_type_ids": encoding["token_type_ids"] + [0] * extra,
                "attention_mask": encoding["attention_mask"] + [0] * extra}

    # -- ids -> text --------------------------------------------------------------------------
    def decode(self, ids: Iterable[int], skip_special_tokens: bool = False,
               clean_up_tokenization_spaces: bool = True) -> str:
        """Join tokens with spaces and glue "##" pieces to the piece before them.

        As Hugging Face's WordPiece decoder does, the clean-up removes the space before
        ".", "?", "!" and ",". Lower-casing, accents and the spacing around other punctuation
        are not recoverable: decode(encode(text)) is the normalised text, not the original.
        """
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        if isinstance(ids, (int, str)):
            # convert_ids_to_tokens(7592) is one token; decode reads a sequence of ids
            raise ValueError(f"ids: expected a list of token ids, got {type(ids).__name__} {ids!r:.30} "
                             f"(wrap one id: [{ids!r:.30}])")
        tokens = self.convert_ids_to_tokens(ids)
        if skip_special_tokens:
            specials = set(self.special_tokens)
            tokens = [t for t in tokens if t not in specials]
        pieces = []
        for i, token in enumerate(tokens):
            if i > 0:
                token = token[len(PREFIX):] if token.startswith(PREFIX) else " " + token
            if clean_up_tokenization_spaces:
                for mark in ".?!,":
                    token = token.replace(" " + mark, mark)
            pieces.append(token)
        return "".join(pieces)


def truncate_longest_first(a: list, b: list | None, budget: int) -> tuple[list, list | None]:
    """Cut `a` (and `b`) to at most `budget` items in total, taking from the longer side.

    The closed form of Hugging Face `tokenizers`' LongestFirst strategy (see `encode`).
    """
    require_int("budget", budget, minimum=0)      # a[:-1] would cut from the other end
    if b is None:
        return a[:budget], None
    if len(a) + len(b) <= budget:
        return a, b
    short, long_ = sorted((len(a), len(b)))
    if short <= budget - short:          # the shorter side fits in its half: keep it whole
        n_short, n_long = short, budget - short
    else:                                # both sides are long: share the budget
        n_short, n_long = budget // 2, budget // 2 + budget % 2
    if len(a) > len(b):
        return a[:n_long], b[:n_short]
    return a[:n_short], b[:n_long]


# ---------------------------------------------------------------------------------------------
# 3. Training a subword vocabulary: BPE and WordPiece
# ---------------------------------------------------------------------------------------------

def word_counts(texts: Iterable[str], lowercase: bool = True) -> Counter:
    """How often each pre-tokenized word occurs: the trainers only ever look at these."""
    refuse_one_text("texts", texts)                 # one str would be read character by character
    counts = Counter()
    for text in texts:
        counts.update(basic_tokenize(text, lowercase=lowercase))
    return counts


def split_word(word: str, prefix: str = PREFIX) -> tuple[str, ...]:
    """The starting segmentation: "low" -> ("l", "##o", "##w")."""
    return (word[0],) + tuple(prefix + c for c in word[1:])


def merge_symbols(a: str, b: str, prefix: str = PREFIX) -> str:
    """("l", "##o") -> "lo"; ("##o", "##w") -> "##ow"."""
    return a + (b[len(prefix):] if prefix and b.startswith(prefix) else b)


class _MergeState:
    """Word segmentations with incrementally maintained pair and symbol frequencies.

    Recounting every pair after each merge would cost O(corpus) per merge; instead only the
    words that contain the merged pair are re-segmented, and their old counts are swapped for
    the new ones. A heap with lazy deletion finds the best pair.
    """

    def __init__(self, counts: Mapping[str, int], prefix: str, use_score: bool):
        self.prefix, self.use_score = prefix, use_score
        self.words = [list(split_word(w, prefix)) for w in counts]
        self.freqs = list(counts.values())
        self.pair_freq: Counter = Counter()
        self.symbol_freq: Counter = Counter()
        self.words_with = defaultdict(set)     # pair -> indices of words containing it
        self.pairs_with = defaultdict(set)     # symbol -> pairs it belongs to (for the score)
        for i, (symbols, f) in enumerate(zip(self.words, self.freqs)):
            self._add(i, symbols, f, sign=1)
        self.heap = []
        for pair in self.pair_freq:
            self._push(pair)

    def score(self, pair) -> float:
        if not self.use_score:
            return float(self.pair_freq[pair])
        a, b = pair
        return self.pair_freq[pair] / (self.symbol_freq[a] * self.symbol_freq[b])

    def _push(self, pair):
        # Max-heap on the score; ties go to the lexicographically smallest pair.
        heapq.heappush(self.heap, (-self.score(pair), pair))

    def _add(self, i, symbols, f, sign, delta=None):
        for s in symbols:
            self.symbol_freq[s] += sign * f
            if delta is not None:
                delta["symbols"][s] += sign * f
        for pair in zip(symbols, symbols[1:]):
            self.pair_freq[pair] += sign * f
            if sign > 0:
                self.words_with[pair].add(i)
                self.pairs_with[pair[0]].add(pair)
                self.pairs_with[pair[1]].add(pair)
            if delta is not None:
                delta["pairs"][pair] += sign * f

    def best_pair(self):
        while self.heap:
            neg_score, pair = heapq.heappop(self.heap)
            if self.pair_freq.get(pair, 0) > 0 and -neg_score == self.score(pair):
                return pair
            # else: a stale entry; the pair's current score was pushed when it changed
        return None

    def merge(self, pair) -> str:
        a, b = pair
        new = merge_symbols(a, b, self.prefix)
        delta = {"symbols": Counter(), "pairs": Counter()}
        for i in sorted(self.words_with.pop(pair)):
            symbols, f = self.words[i], self.freqs[i]
            if pair not in zip(symbols, symbols[1:]):  # an earlier merge already consumed it
                continue
            self._add(i, symbols, f, sign=-1, delta=delta)
            merged, j = [], 0
            while j < len(symbols):
                if j + 1 < len(symbols) and symbols[j] == a and symbols[j + 1] == b:
                    merged.append(new)
                    j += 2
                else:
                    merged.append(symbols[j])
                    j += 1
            self.words[i] = merged
            self._add(i, merged, f, sign=1, delta=delta)
        changed_pairs = {p for p, d in delta["pairs"].items() if d != 0}
        for p in changed_pairs:
            if self.pair_freq[p] <= 0:
                del self.pair_freq[p]
                self.words_with.pop(p, None)
                for s in p:
                    self.pairs_with[s].discard(p)
        to_push = {p for p in changed_pairs if p in self.pair_freq}
        if self.use_score:  # a symbol's frequency moved: every pair containing it is rescored
            for s, d in delta["symbols"].items():
                if d != 0:
                    to_push |= self.pairs_with[s]
        for p in sorted(to_push):
            self._push(p)
        return new


def _train(texts, vocab_size, use_score, special_tokens, prefix, lowercase):
    refuse_one_text("special_tokens", special_tokens)
    special_tokens = list(special_tokens)
    counts = word_counts(texts, lowercase=lowercase)
    if not counts:
        raise ValueError("texts: expected text with at least one word, got none")
    alphabet = sorted({s for w in counts for s in split_word(w, prefix)})
    vocab = list(special_tokens) + alphabet
    if vocab_size < len(vocab):
        raise ValueError(f"vocab_size={vocab_size} is below the {len(special_tokens)} special "
                         f"tokens plus the {len(alphabet)} characters of the text")
    state = _MergeState(counts, prefix, use_score)
    merges = []
    while len(vocab) < vocab_size:
        pair = state.best_pair()
        if pair is None:  # every word is a single symbol already
            break
        new = state.merge(pair)
        merges.append(pair)
        if new not in vocab:
            vocab.append(new)
    return vocab, merges


def train_bpe(texts: Iterable[str], vocab_size: int, special_tokens=SPECIAL_TOKENS,
              prefix: str = PREFIX, lowercase: bool = True):
    """Byte-pair encoding: repeatedly merge the most frequent adjacent pair of symbols.

    Returns (vocab, merges): the token list (specials, characters, then merged symbols in
    merge order) and the merges as (left, right) pairs in the order learned. Ties go to the
    lexicographically smallest pair. Words come from `basic_tokenize`, so no merge crosses a
    space or punctuation; continuation symbols carry `prefix` ("##"), as in WordPiece, so
    the two trainers differ only in their merge rule.
    """
    return _train(texts, vocab_size, False, special_tokens, prefix, lowercase)


def train_wordpiece(texts: Iterable[str], vocab_size: int, special_tokens=SPECIAL_TOKENS,
                    prefix: str = PREFIX, lowercase: bool = True):
    """WordPiece: repeatedly merge the pair with the highest freq(ab) / (freq(a) * freq(b)).

    Returns (vocab, merges) like `train_bpe`; `WordPieceTokenizer(vocab)` then segments
    with greedy longest match, ignoring the merge order.
    """
    return _train(texts, vocab_size, True, special_tokens, prefix, lowercase)


def bpe_encode_word(word: str, merges: Sequence[tuple[str, str]], prefix: str = PREFIX,
                    ranks: Mapping[tuple[str, str], int] | None = None) -> list[str]:
    """Segment one word by replaying the merges: always apply the earliest-learned merge that
    occurs in the word, until none does. `ranks` ({pair: its index in merges}) saves building
    it again for every word (BPETokenizer keeps one)."""
    if ranks is None:
        ranks = {tuple(pair): r for r, pair in enumerate(merges)}
    symbols = list(split_word(word, prefix))
    while len(symbols) > 1:
        pairs = [(ranks.get(p, len(ranks)), k) for k, p in enumerate(zip(symbols, symbols[1:]))]
        rank, k = min(pairs)
        if rank == len(ranks):
            break
        a, b = symbols[k], symbols[k + 1]
        merged, j = [], 0
        while j < len(symbols):
            if j + 1 < len(symbols) and symbols[j] == a and symbols[j + 1] == b:
                merged.append(merge_symbols(a, b, prefix))
                j += 2
            else:
                merged.append(symbols[j])
                j += 1
        symbols = merged
    return symbols


class BPETokenizer:
    """Tokenize text with learned BPE merges: `BPETokenizer(*train_bpe(texts, 1000))`.

    A character the training text never contained becomes `unk_token`.
    """

    def __init__(self, vocab, merges, prefix: str = PREFIX, lowercase: bool = True,
                 unk_token: str = "[UNK]"):
        self.vocab = load_vocab(vocab)
        _require_in_vocab("unk_token", unk_token, self.vocab)        # (vocab, merges), in that order
        self.merges = [tuple(m) for m in merges]
        self.ranks = {pair: r for r, pair in enumerate(self.merges)}
        self.prefix, self.lowercase, self.unk_token = prefix, lowercase, unk_token

    def tokenize(self, text: str) -> list[str]:
        tokens = []
        for word in basic_tokenize(text, lowercase=self.lowercase):
            pieces = bpe_encode_word(word, self.merges, self.prefix, self.ranks)
            tokens += [p if p in self.vocab else self.unk_token for p in pieces]
        return tokens

    def encode(self, text: str) -> list[int]:
        return [self.vocab[t] for t in self.tokenize(text)]
