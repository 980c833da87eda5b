"""Bad inputs to the data-side API (tokenization, masking, span corruption, sentence pairs and
similarity, the synthetic data, int8 quantisation, fast inference, pretraining) raise an error
that starts with the argument's name and says what was expected and what came; honest inputs
still work (the end). Same table style as test_bad_inputs.py: one row per fuzz finding.

Each row: (case id, a call that must fail, the exception type, the message as a regex).
Only the checks at a user's entry stay (see test_bad_inputs.py); an argument that Python's or
PyTorch's own error already names, or that only the library itself passes, has no row.
"""
import math
import random

import numpy as np
import pytest
import torch
from torch import nn

from course_lib import (fast_inference, masking, pretraining, pretraining_cli, sentence_pairs,
                        sentence_similarity, span_corruption, tokenization)
from course_lib.data import corpus, markov, similarity_pairs, tasks, toy
from course_lib.pretraining_batches import PairBatcher

pytestmark = pytest.mark.unit

_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "h", "##i", "hi", "the", "cat", ","]
_tok = tokenization.WordPieceTokenizer(_VOCAB)
_DOCS = corpus.make_documents(3, seed=0)
_G = lambda: torch.Generator().manual_seed(0)
IDS = torch.tensor([[5, 6, 7]])
_special = torch.zeros(1, 3, dtype=torch.bool)
_mt = lambda **kw: masking.mask_tokens(IDS, **{**dict(mask_token_id=4, vocab_size=10, special_tokens_mask=_special), **kw})
_TINY = dict(hidden_size=8, num_attention_heads=2, intermediate_size=8, num_hidden_layers=1)

# ------------------------------------------------------------------------------- tokenization
TOKENIZATION = [
    ("normalize None", lambda: tokenization.normalize(None), ValueError, r"^text: expected a str, got NoneType"),
    ("normalize bytes", lambda: tokenization.normalize(b"Hi"), ValueError, r"^text: expected a str, got bytes"),
    ("basic_tokenize list", lambda: tokenization.basic_tokenize(["x"]), ValueError, r"^text: expected a str, got list"),
    ("BPETokenizer.tokenize int", lambda: tokenization.BPETokenizer(["[UNK]", "a"], []).tokenize(5), ValueError, r"^text: expected a str, got int 5"),
    ("BPETokenizer.encode None", lambda: tokenization.BPETokenizer(["[UNK]", "a"], []).encode(None), ValueError, r"^text: expected a str, got NoneType"),
    ("BPETokenizer swapped", lambda: tokenization.BPETokenizer([("a", "##b")], ["[UNK]", "a"]), ValueError, r"^unk_token: expected a token of the vocabulary \(1 tokens\), got '\[UNK\]'"),
    ("load_vocab duplicates", lambda: tokenization.load_vocab(["a", "b", "a"]), ValueError, r"^vocab: expected distinct tokens, got \['a'\] more than once"),
    ("load_vocab text not path", lambda: tokenization.load_vocab("[PAD]\n[UNK]"), FileNotFoundError, r"^vocab: expected a path to a vocab\.txt file, got '\[PAD\]"),
    ("WordPieceTokenizer one str of tokens", lambda: tokenization.WordPieceTokenizer("[PAD] [UNK] [CLS]"), FileNotFoundError, r"^vocab: expected a path to a vocab\.txt file, got '\[PAD\] \[UNK\] \[CLS\]'"),
    ("__call__ return_tensors np", lambda: _tok(["hi"], return_tensors="np"), ValueError, r"^return_tensors: expected 'pt' or None, got 'np'"),
    ("decode float id", lambda: _tok.decode([5.7]), TypeError, r"'float' object cannot be interpreted as an integer"),
    ("decode float tensor", lambda: _tok.decode(torch.tensor([2.0, 5.0, 3.0])), TypeError, r"'float' object cannot be interpreted as an integer"),
    ("convert_ids_to_tokens [5.9]", lambda: _tok.convert_ids_to_tokens([5.9]), TypeError, r"'float' object cannot be interpreted as an integer"),
    ("convert_tokens_to_ids a text", lambda: _tok.convert_tokens_to_ids("the cat"), ValueError, r"^tokens: expected one token \(or a list of tokens\), got a text 'the cat'"),
    ("truncate budget -1", lambda: tokenization.truncate_longest_first([1, 2, 3], None, -1), ValueError, r"^budget: expected an int >= 0, got -1"),
    ("truncate budget -1 pair", lambda: tokenization.truncate_longest_first([1], [4], -1), ValueError, r"^budget: expected an int >= 0, got -1"),
    ("truncate budget 2.5", lambda: tokenization.truncate_longest_first([1], None, 2.5), ValueError, r"^budget: expected an int, got float 2\.5"),
    ("train_bpe special_tokens str", lambda: tokenization.train_bpe(["a b"], 50, special_tokens="[PAD]"), ValueError, r"^special_tokens: expected a list of str, got one str '\[PAD\]'"),
    ("train_bpe texts []", lambda: tokenization.train_bpe([], 50), ValueError, r"^texts: expected text with at least one word, got none"),
]

# ------------------------------------------------------------------------- masking, span corruption
MASKING = [
    ("random_word_ids mask_token_id -5", lambda: masking.random_word_ids(30, -5), ValueError, r"^mask_token_id: expected an id in \[0, vocab_size=30\), got -5"),
    ("random_word_ids mask_token_id 30", lambda: masking.random_word_ids(30, 30), ValueError, r"^mask_token_id: expected an id in \[0, vocab_size=30\), got 30"),
    ("random_word_ids mask_token_id 30, special_ids []", lambda: masking.random_word_ids(30, 30, []), ValueError, r"^mask_token_id: expected an id in \[0, vocab_size=30\), got 30"),
    ("random_word_ids vocab_size 0", lambda: masking.random_word_ids(0, 4), ValueError, r"^mask_token_id: expected an id in \[0, vocab_size=0\), got 4"),
    ("mask_tokens split NaN", lambda: _mt(mask_prob_split=(math.nan, 0, 0)), ValueError, r"^mask_prob_split: expected three non-negative shares summing to 1, got \(nan, 0, 0\)"),
    ("span_lengths float", lambda: span_corruption.span_lengths(torch.tensor([0.5, 0.5])), ValueError, r"^noise_mask: expected a bool tensor \(or 0/1 integers\), got torch\.float32"),
    ("span_lengths int 2", lambda: span_corruption.span_lengths(torch.tensor([0, 2])), ValueError, r"^noise_mask: expected a bool tensor \(or 0/1 integers\), got torch\.int64"),
    ("span_corrupt sentinel collides", lambda: span_corruption.span_corrupt(torch.arange(6), torch.tensor([0, 1, 0, 0, 1, 0]).bool(), [1, 2, 3]),
     ValueError, r"^sentinel_ids: expected ids that do not occur in input_ids, got \[1, 2, 3\], which do"),
]

# ------------------------------------------------------------------ sentence pairs and similarity
PAIRS = [
    ("make_pair document 5", lambda: sentence_pairs.make_pair(_DOCS, (5, 0), "sop", random.Random(0)), ValueError, r"^location: expected \(document index, index of a sentence with a next one\), got \(5, 0\)"),
    ("make_pair last sentence", lambda: sentence_pairs.make_pair(_DOCS, (0, len(_DOCS[0].sentences) - 1), "sop", random.Random(0)),
     ValueError, rf"^location: expected .*got \(0, {len(_DOCS[0].sentences) - 1}\)"),
    ("text_documents one str", lambda: sentence_pairs.text_documents("Some text. More text."), ValueError, r"^texts: expected a list of str, got one str"),
    ("spearman NaN", lambda: sentence_similarity.spearman([1, math.nan, 3], [1, 2, 3]), ValueError, r"^x: expected a 1-D sequence of finite numbers"),
    ("spearman inf", lambda: sentence_similarity.spearman([1, 2, 3], [1, math.inf, 3]), ValueError, r"^y: expected a 1-D sequence of finite numbers"),
    ("spearman 2-D", lambda: sentence_similarity.spearman([[1, 2], [3, 4]], [1, 2, 3, 4]), ValueError, r"^x: expected a 1-D sequence of finite numbers, got shape \(2, 2\)"),
    ("roc_auc 2-D", lambda: sentence_similarity.roc_auc([[0.1, 0.2], [0.3, 0.4]], [0, 1, 0, 1]), ValueError, r"^scores: expected a 1-D sequence of finite numbers, got shape \(2, 2\)"),
    ("roc_auc empty", lambda: sentence_similarity.roc_auc([], []), ValueError, r"^positive: expected .*both classes.*\(0 positives, 0 negatives\)"),
    ("rewrite rng int", lambda: similarity_pairs.rewrite("A value is given.", 0), ValueError, r"^rng: expected a random\.Random, got int 0"),
    ("rewrite ''", lambda: similarity_pairs.rewrite("", random.Random(0)), ValueError, r"^sentence: expected a sentence ending in '\.', got str ''"),
    ("rewrite int", lambda: similarity_pairs.rewrite(5, random.Random(0)), ValueError, r"^sentence: expected a sentence ending in '\.', got int 5"),
]

# ---------------------------------------------------------------------------- synthetic data
_topic = corpus.TOPICS[0]
DATA = [
    ("Topic objects one str", lambda: corpus.Topic("x", "carrot", ("kitchen",), ("a",)), ValueError, r"^objects: expected a list of str, got one str 'carrot'"),
    ("make_documents seed 1.5", lambda: corpus.make_documents(2, seed=1.5), ValueError, r"^seed: expected an int, a random\.Random or a torch\.Generator, got float 1\.5"),
    ("sample_markov offset -3", lambda: markov.sample_markov(markov.make_markov_language(5, 2, _G()), 2, 4, _G(), offset=-3), ValueError, r"^offset: expected an int >= 0, got -3"),
    ("sample_markov offset 1.5", lambda: markov.sample_markov(markov.make_markov_language(5, 2, _G()), 2, 4, _G(), offset=1.5), ValueError, r"^offset: expected an int, got float 1\.5"),
]

# ---------------------------------------------------------------- quantization, fast inference
_w = torch.randn(4, 6, generator=_G())
_lin = nn.Linear(6, 4)
QUANTIZATION = [
    ("paired_ratio lengths", lambda: fast_inference.paired_ratio({"a": [1.0, 2.0], "b": [1.0]}, "a", "b"), ValueError, r"^times\['b'\]: expected 2 rounds like times\['a'\], got 1"),
    ("LowRankLinear rank 2.5", lambda: fast_inference.LowRankLinear(_lin, 2.5), ValueError, r"^rank: expected 1\.\.4 for a 4x6 weight, got 2\.5"),
    ("LowRankLinear rank True", lambda: fast_inference.LowRankLinear(_lin, True), ValueError, r"^rank: expected 1\.\.4 for a 4x6 weight, got True"),
]

# -------------------------------------------------------------------------------- pretraining
_batcher = PairBatcher(_DOCS, corpus.corpus_tokenizer())
PRETRAINING = [
    ("PretrainConfig steps -1", lambda: pretraining.PretrainConfig(steps=-1), ValueError, r"^steps: expected a positive int, got -1"),
    ("PretrainConfig lr NaN", lambda: pretraining.PretrainConfig(lr=math.nan), ValueError, r"^lr: expected a finite number, got nan"),
    ("PretrainConfig mask_ratio 1.5", lambda: pretraining.PretrainConfig(mask_ratio=1.5), ValueError, r"^mask_ratio: expected a number <= 1\.0, got 1\.5"),
    ("PretrainConfig batch_size 0", lambda: pretraining.PretrainConfig(batch_size=0), ValueError, r"^batch_size: expected a positive int, got 0"),
    ("PretrainConfig heads 5", lambda: pretraining.PretrainConfig(num_attention_heads=5), ValueError, r"^hidden_size=64 must be divisible by num_attention_heads=5"),
    ("PretrainConfig split of 2", lambda: pretraining.PretrainConfig(mask_prob_split=(0.8, 0.2)), ValueError, r"^mask_prob_split: expected three non-negative shares summing to 1 .*got \(0\.8, 0\.2\)"),
    ("PretrainConfig n_docs 1", lambda: pretraining.PretrainConfig(n_docs=1), ValueError, r"^n_docs: expected an int >= 2, got 1"),
    ("cache_key seed None", lambda: pretraining.cache_key(pretraining.PretrainConfig(), None), ValueError, r"^seed: expected an int, got NoneType"),
    ("PairBatcher docs one str", lambda: PairBatcher("some text", corpus.corpus_tokenizer()), ValueError, r"^documents: expected a list of str, got one str 'some text'"),
    ("main argv str", lambda: pretraining_cli.main("--help"), ValueError, r"^argv: expected a list of str .*got one str '--help'"),
]


def _pretraining_losses_cases():
    from course_lib.bert import BertForPreTraining
    model = BertForPreTraining(pretraining.PretrainConfig(**_TINY).bert_config(20)).eval()
    return [
        ("evaluate mask_ratio 2", lambda: pretraining.evaluate(model, corpus.corpus_tokenizer(), _DOCS, mask_ratio=2), ValueError, r"^ratio: expected a number <= 1\.0, got 2"),
    ]


PRETRAINING += _pretraining_losses_cases()

TABLES = {"tokenization": TOKENIZATION, "masking": MASKING, "pairs": PAIRS, "data": DATA,
          "quantization": QUANTIZATION, "pretraining": PRETRAINING}
CASES = [pytest.param(call, error, message, id=f"{module}: {name}")
         for module, rows in TABLES.items() for name, call, error, message in rows]


@pytest.mark.parametrize("call,error,message", CASES)
def test_bad_input_raises_naming_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ------------------------------------------------------------ honest inputs still work
def test_honest_inputs_still_work():
    # numpy ints where a size or an id is expected
    assert _tok.convert_ids_to_tokens(np.int64(7)) == "hi"
    assert _tok.convert_ids_to_tokens(torch.tensor(7)) == "hi"
    assert _tok.decode(torch.tensor([2, 7, 3])) == "[CLS] hi [SEP]"
    assert _tok.decode(np.array([7, 8])) == "hi the"
    assert tasks.make_batch("copy", np.int64(2), np.int64(4), 20, _G()).src.shape == (2, 4)
    assert toy.make_spirals(np.int64(10), _G())[0].shape == (10, 2)
    assert sentence_pairs.as_random(np.int64(5)).random() == random.Random(5).random()
    # int 0/1 masks where a bool mask is expected; a (1, 0, 0) split with an empty random-word table
    masked, labels = _mt(special_tokens_mask=torch.tensor([[1, 0, 0]]), generator=_G(), ratio=1.0)
    assert labels[0, 0] == -100 and (labels[0, 1:] == IDS[0, 1:]).all()
    assert masking.random_word_ids(10, 9).numel() == 0
    assert span_corruption.span_lengths(torch.tensor([0, 1, 1, 0, 1])).tolist() == [2, 1]
    # documents as lists of sentence strings: make_pairs and PairBatcher agree
    docs = [["A b c.", "D e f.", "G h i."], ["J k l.", "M n o."]]
    assert len(sentence_pairs.make_pairs(docs, "nsp")) == 3
    tok = corpus.corpus_tokenizer()
    assert PairBatcher(docs, tok).batch(4, random.Random(0))["input_ids"].shape[0] == 4
    # a token id list with numpy ints decodes; the tokenizer's list/None outputs
    assert _tok.decode([np.int64(7)]) == "hi"
    assert isinstance(_tok(["hi"], return_tensors=None)["input_ids"], list)
    assert tokenization.truncate_longest_first([1, 2, 3], [4], 0) == ([], [])
    assert tokenization.truncate_longest_first(torch.arange(5), None, 2)[0].tolist() == [0, 1]
    assert fast_inference.median((3.0, np.float32(1.0), 2)) == 2
    assert markov.sample_markov(markov.make_markov_language(5, 2, _G()), 2, 4, _G(), offset=4).min() >= 4


def test_valid_results_are_unchanged_by_the_checks():
    """The checks only raise: an int seed and its random.Random draw the same data, and a 0/1
    integer special_tokens_mask masks exactly as the bool one (same generator draws)."""
    docs = corpus.make_documents(2, seed=0)
    assert docs[0].sentences[0] == corpus.make_documents(2, seed=random.Random(0))[0].sentences[0]
    pairs = sentence_pairs.make_pairs(_DOCS, "sop", generator=3, n=5)
    assert pairs == sentence_pairs.make_pairs(_DOCS, "sop", generator=random.Random(3), n=5)
    g1, g2 = _G(), _G()
    a = masking.mask_tokens(torch.arange(5, 30).reshape(5, 5), mask_token_id=4, vocab_size=30,
                            special_tokens_mask=torch.zeros(5, 5, dtype=torch.bool), generator=g1, ratio=0.5)
    b = masking.mask_tokens(torch.arange(5, 30).reshape(5, 5), mask_token_id=4, vocab_size=30,
                            special_tokens_mask=torch.zeros(5, 5, dtype=torch.long), generator=g2, ratio=0.5)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
