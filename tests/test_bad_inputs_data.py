"""Bad inputs to the data-side API (tokenization, masking, span corruption, sentence pairs and
similarity, the synthetic data, int8 quantisation, fast inference, pretraining) raise an error
that starts with the argument's name and says what was expected and what came; honest inputs
still work (the end). Same table style as test_bad_inputs.py: one row per fuzz finding.

Each row: (case id, a call that must fail, the exception type, the message as a regex).
"""
import math
import random

import numpy as np
import pytest
import torch
from torch import nn

from course_lib import (fast_inference, masking, pretraining, pretraining_cli, quantization, sentence_pairs,
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
    ("pre_tokenize int", lambda: tokenization.pre_tokenize(5), ValueError, r"^text: expected a str, got int 5"),
    ("basic_tokenize list", lambda: tokenization.basic_tokenize(["x"]), ValueError, r"^text: expected a str, got list"),
    ("BPETokenizer.tokenize int", lambda: tokenization.BPETokenizer(["[UNK]", "a"], []).tokenize(5), ValueError, r"^text: expected a str, got int 5"),
    ("BPETokenizer.encode None", lambda: tokenization.BPETokenizer(["[UNK]", "a"], []).encode(None), ValueError, r"^text: expected a str, got NoneType"),
    ("split_word ''", lambda: tokenization.split_word(""), ValueError, r"^word: expected a non-empty str, got str ''"),
    ("split_word list", lambda: tokenization.split_word(["a", "b"]), ValueError, r"^word: expected a non-empty str, got list"),
    ("merge_symbols int", lambda: tokenization.merge_symbols(1, "##a"), ValueError, r"^a: expected a str symbol, got int 1"),
    ("bpe_encode_word ''", lambda: tokenization.bpe_encode_word("", []), ValueError, r"^word: expected one word without spaces, got ''"),
    ("bpe_encode_word sentence", lambda: tokenization.bpe_encode_word("the cook", []), ValueError, r"^word: expected one word without spaces, got 'the cook'"),
    ("bpe_encode_word merges of str", lambda: tokenization.bpe_encode_word("cook", ["co", "ok"]), ValueError, r"^merges\[0\]: expected a \(left, right\) pair of str, got 'co'"),
    ("BPETokenizer 3-tuples", lambda: tokenization.BPETokenizer(["[UNK]", "a"], [("a", "b", "c")]), ValueError, r"^merges\[0\]: expected a \(left, right\) pair of str, got \('a', 'b', 'c'\)"),
    ("BPETokenizer swapped", lambda: tokenization.BPETokenizer([("a", "##b")], ["[UNK]", "a"]), ValueError, r"^vocab\[0\]: expected a str token, got tuple .*\(vocab, merges\)"),
    ("wordpiece sentence", lambda: tokenization.wordpiece("un able", {"un"}), ValueError, r"^word: expected one word without spaces, got 'un able'"),
    ("wordpiece vocab None", lambda: tokenization.wordpiece("a", None), ValueError, r"^vocab: expected a dict token -> id or a set of tokens, got NoneType"),
    ("wordpiece max chars 0", lambda: tokenization.wordpiece("a", {"a"}, max_input_chars_per_word=0), ValueError, r"^max_input_chars_per_word: expected a positive int, got 0"),
    ("load_vocab duplicates", lambda: tokenization.load_vocab(["a", "b", "a"]), ValueError, r"^vocab: expected distinct tokens, got 'a' at index 0 and 2"),
    ("load_vocab str ids", lambda: tokenization.load_vocab({"a": "0"}), ValueError, r"^vocab: expected a dict str token -> int id >= 0, got 'a': '0'"),
    ("load_vocab empty", lambda: tokenization.load_vocab([]), ValueError, r"^vocab: expected at least one token, got an empty list"),
    ("load_vocab int", lambda: tokenization.load_vocab(5), ValueError, r"^vocab: expected a path to a vocab\.txt, .*got int"),
    ("load_vocab text not path", lambda: tokenization.load_vocab("[PAD]\n[UNK]"), FileNotFoundError, r"^vocab: expected a path to a vocab\.txt file, got a str with 1 newlines"),
    ("WordPieceTokenizer one str of tokens", lambda: tokenization.WordPieceTokenizer("[PAD] [UNK] [CLS]"), FileNotFoundError, r"^vocab: expected a path to a vocab\.txt file, got '\[PAD\] \[UNK\] \[CLS\]'"),
    ("WordPieceTokenizer max_position_embeddings 0", lambda: tokenization.WordPieceTokenizer(_VOCAB, max_position_embeddings=0), ValueError, r"^max_position_embeddings: expected a positive int, got 0"),
    ("WordPieceTokenizer max_position_embeddings -5", lambda: tokenization.WordPieceTokenizer(_VOCAB, max_position_embeddings=-5), ValueError, r"^max_position_embeddings: expected a positive int, got -5"),
    ("WordPieceTokenizer max_position_embeddings str", lambda: tokenization.WordPieceTokenizer(_VOCAB, max_position_embeddings="512"), ValueError, r"^max_position_embeddings: expected a positive int, got str '512'"),
    ("corpus_tokenizer -1", lambda: corpus.corpus_tokenizer(-1), ValueError, r"^max_position_embeddings: expected a positive int, got -1"),
    ("WordPieceTokenizer sep == cls", lambda: tokenization.WordPieceTokenizer(_VOCAB, sep_token="[CLS]"), ValueError, r"^sep_token: expected a token other than cls_token's '\[CLS\]', got the same"),
    ("encode padding -3", lambda: _tok.encode("hi", padding=-3), ValueError, r"^padding: expected an int >= 0, got -3"),
    ("__call__ return_tensors np", lambda: _tok(["hi"], return_tensors="np"), ValueError, r"^return_tensors: expected 'pt' \(torch tensors\) or None \(lists\), got 'np'"),
    ("decode float id", lambda: _tok.decode([5.7]), ValueError, r"^ids\[0\]: expected an int token id, got float 5\.7"),
    ("decode bool ids", lambda: _tok.decode([True, False]), ValueError, r"^ids\[0\]: expected an int token id, got bool True"),
    ("decode float tensor", lambda: _tok.decode(torch.tensor([2.0, 5.0, 3.0])), ValueError, r"^ids\[0\]: expected an int token id, got float 2\.0"),
    ("decode 2-D tensor", lambda: _tok.decode(torch.tensor([[2, 5, 3]])), ValueError, r"^ids: expected a 1-D sequence of ids, got shape \(1, 3\)"),
    ("decode encode()'s dict", lambda: _tok.decode(_tok.encode("hi")), ValueError, r"^ids: expected a list of token ids, got a dict .*input_ids"),
    ("convert_ids_to_tokens '5'", lambda: _tok.convert_ids_to_tokens("5"), ValueError, r"^ids: expected an int id or a list of int ids, got str '5'"),
    ("convert_ids_to_tokens float", lambda: _tok.convert_ids_to_tokens(5.0), ValueError, r"^ids: expected an int id or a list of int ids, got float 5\.0"),
    ("convert_ids_to_tokens [5.9]", lambda: _tok.convert_ids_to_tokens([5.9]), ValueError, r"^ids\[0\]: expected an int token id, got float 5\.9"),
    ("convert_tokens_to_ids int item", lambda: _tok.convert_tokens_to_ids(["the", 5]), ValueError, r"^tokens\[1\]: expected a str, got int 5"),
    ("convert_tokens_to_ids int", lambda: _tok.convert_tokens_to_ids(5), ValueError, r"^tokens: expected a str or a list of str, got int 5"),
    ("convert_tokens_to_ids a text", lambda: _tok.convert_tokens_to_ids("the cat"), ValueError, r"^tokens: expected one token \(or a list of tokens\), got a text 'the cat'"),
    ("truncate budget -1", lambda: tokenization.truncate_longest_first([1, 2, 3], None, -1), ValueError, r"^budget: expected an int >= 0, got -1"),
    ("truncate budget -1 pair", lambda: tokenization.truncate_longest_first([1], [4], -1), ValueError, r"^budget: expected an int >= 0, got -1"),
    ("truncate budget 2.5", lambda: tokenization.truncate_longest_first([1], None, 2.5), ValueError, r"^budget: expected an int, got float 2\.5"),
    ("truncate a str", lambda: tokenization.truncate_longest_first("abc", None, 2), ValueError, r"^a: expected a list of ids, got str 'abc'"),
    ("word_counts None", lambda: tokenization.word_counts(None), ValueError, r"^texts: expected a list of str, got NoneType"),
    ("train_bpe special_tokens str", lambda: tokenization.train_bpe(["a b"], 50, special_tokens="[PAD]"), ValueError, r"^special_tokens: expected a list of str, got one str '\[PAD\]'"),
    ("train_bpe special_tokens twice", lambda: tokenization.train_bpe(["a b"], 50, special_tokens=["[PAD]", "[PAD]"]), ValueError, r"^special_tokens: expected distinct tokens, got '\[PAD\]' twice"),
    ("train_bpe vocab_size 50.5", lambda: tokenization.train_bpe(["a b"], 50.5), ValueError, r"^vocab_size: expected a positive int, got float 50\.5"),
    ("train_bpe vocab_size str", lambda: tokenization.train_bpe(["a b"], "50"), ValueError, r"^vocab_size: expected a positive int, got str '50'"),
    ("train_bpe texts []", lambda: tokenization.train_bpe([], 50), ValueError, r"^texts: expected text with at least one word, got none"),
    ("train_wordpiece None", lambda: tokenization.train_wordpiece(None, 50), ValueError, r"^texts: expected a list of str, got NoneType"),
]

# ------------------------------------------------------------------------- masking, span corruption
MASKING = [
    ("random_word_ids mask_token_id -5", lambda: masking.random_word_ids(30, -5), ValueError, r"^mask_token_id: expected an id in \[0, vocab_size=30\), got -5"),
    ("random_word_ids mask_token_id 30", lambda: masking.random_word_ids(30, 30), ValueError, r"^mask_token_id: expected an id in \[0, vocab_size=30\), got 30"),
    ("random_word_ids mask_token_id 30, special_ids []", lambda: masking.random_word_ids(30, 30, []), ValueError, r"^mask_token_id: expected an id in \[0, vocab_size=30\), got 30"),
    ("random_word_ids vocab_size 0", lambda: masking.random_word_ids(0, 4), ValueError, r"^vocab_size: expected a positive int, got 0"),
    ("random_word_ids vocab_size 30.0", lambda: masking.random_word_ids(30.0, 4), ValueError, r"^vocab_size: expected a positive int, got float 30\.0"),
    ("random_word_ids special_ids [1.7]", lambda: masking.random_word_ids(30, 4, [1.7]), ValueError, r"^special_ids\[0\]: expected an int id, got float 1\.7"),
    ("random_word_ids special_ids str", lambda: masking.random_word_ids(30, 4, "[CLS]"), ValueError, r"^special_ids: expected a list of int ids, got str '\[CLS\]'"),
    ("mask_tokens split of 2", lambda: _mt(mask_prob_split=(0.8, 0.1)), ValueError, r"^mask_prob_split: expected three shares \(mask, random, keep\) summing to 1, got \(0\.8, 0\.1\)"),
    ("mask_tokens split NaN", lambda: _mt(mask_prob_split=(math.nan, 0, 0)), ValueError, r"^mask_prob_split: expected three non-negative shares summing to 1 .*got \(nan, 0, 0\)"),
    ("mask_tokens special mask 0.3", lambda: _mt(special_tokens_mask=torch.full((1, 3), 0.3)), ValueError, r"^special_tokens_mask: expected a bool tensor \(True = special\), got torch\.float32"),
    ("mask_tokens special mask 2", lambda: _mt(special_tokens_mask=torch.full((1, 3), 2)), ValueError, r"^special_tokens_mask: expected bool or 0/1 values \(1 = special\), got values in \[2, 2\]"),
    ("mask_tokens generator int", lambda: _mt(generator=0), ValueError, r"^generator: expected a torch\.Generator or None, got int 0"),
    ("mask_tokens special_ids [1.7]", lambda: _mt(special_ids=[1.7]), ValueError, r"^special_ids\[0\]: expected an int id, got float 1\.7"),
    ("span_lengths float", lambda: span_corruption.span_lengths(torch.tensor([0.5, 0.5])), ValueError, r"^noise_mask: expected a bool tensor \(or 0/1 integers\), got torch\.float32"),
    ("span_lengths int 2", lambda: span_corruption.span_lengths(torch.tensor([0, 2])), ValueError, r"^noise_mask: expected a bool tensor \(or 0/1 integers\), got torch\.int64 with values in \[0, 2\]"),
    ("span_corrupt sentinel collides", lambda: span_corruption.span_corrupt(torch.arange(6), torch.tensor([0, 1, 0, 0, 1, 0]).bool(), [1, 2, 3]),
     ValueError, r"^sentinel_ids: expected ids that do not occur in input_ids, got \[1, 2, 3\], which do"),
    ("span_corrupt sentinel negative", lambda: span_corruption.span_corrupt(torch.arange(6), torch.tensor([0, 1, 0, 0, 1, 0]).bool(), [-1, -2, -3]),
     ValueError, r"^sentinel_ids: expected ids >= 0, got \[-1, -2, -3\]"),
    ("span_corrupt float ids", lambda: span_corruption.span_corrupt(torch.arange(6.0), torch.tensor([0, 1, 0, 0, 1, 0]).bool(), [100, 101, 102]),
     ValueError, r"^input_ids: expected integer ids \(torch\.long\), got dtype torch\.float32"),
    ("span_corrupt sentinel_ids int", lambda: span_corruption.span_corrupt(torch.arange(6), torch.tensor([0, 1, 0, 0, 1, 0]).bool(), 100),
     ValueError, r"^sentinel_ids: expected a list of int ids, got int 100"),
    ("random_spans_noise_mask mean inf", lambda: span_corruption.random_spans_noise_mask(10, mean_noise_span_length=math.inf), ValueError, r"^mean_noise_span_length: expected a finite number, got inf"),
    ("random_spans_noise_mask generator 0", lambda: span_corruption.random_spans_noise_mask(10, generator=0), ValueError, r"^generator: expected a torch\.Generator or None, got int 0"),
]

# ------------------------------------------------------------------ sentence pairs and similarity
PAIRS = [
    ("make_pair document 5", lambda: sentence_pairs.make_pair(_DOCS, (5, 0), "sop", random.Random(0)), ValueError, r"^location: expected a document index in \[0, 3\), got 5"),
    ("make_pair last sentence", lambda: sentence_pairs.make_pair(_DOCS, (0, len(_DOCS[0].sentences) - 1), "sop", random.Random(0)),
     ValueError, rf"^location: expected a sentence index in \[0, {len(_DOCS[0].sentences) - 1}\) .*got {len(_DOCS[0].sentences) - 1}"),
    ("make_pair rng int", lambda: sentence_pairs.make_pair(_DOCS, (0, 0), "sop", 0), ValueError, r"^rng: expected a random\.Random, got int 0"),
    ("make_pair location int", lambda: sentence_pairs.make_pair(_DOCS, 3, "sop", random.Random(0)), ValueError, r"^location: expected \(document index, sentence index\), got 3"),
    ("sample_pair no candidates", lambda: sentence_pairs.sample_pair(_DOCS, [], "nsp", random.Random(0)), ValueError, r"^candidates: expected at least one .*got none"),
    ("sample_pair rng int", lambda: sentence_pairs.sample_pair(_DOCS, [(0, 0)], "nsp", 0), ValueError, r"^rng: expected a random\.Random, got int 0"),
    ("make_pairs n -1", lambda: sentence_pairs.make_pairs(_DOCS, "nsp", n=-1), ValueError, r"^n: expected an int >= 0, got -1"),
    ("make_pairs n 2.5", lambda: sentence_pairs.make_pairs(_DOCS, "nsp", n=2.5), ValueError, r"^n: expected an int, got float 2\.5"),
    ("as_documents None", lambda: sentence_pairs.as_documents(None), ValueError, r"^documents: expected a list of Documents or of lists of sentence strings, got NoneType"),
    ("text_documents one str", lambda: sentence_pairs.text_documents("Some text. More text."), ValueError, r"^texts: expected a list of str, got one str"),
    ("text_documents int item", lambda: sentence_pairs.text_documents(["a", 3]), ValueError, r"^texts\[1\]: expected a str, got int 3"),
    ("text_documents min > max", lambda: sentence_pairs.text_documents(["a b c d."], min_words=10, max_words=5), ValueError, r"^max_words: expected >= min_words=10, got 5"),
    ("text_documents min_words -1", lambda: sentence_pairs.text_documents(["a b c d."], min_words=-1), ValueError, r"^min_words: expected an int >= 0, got -1"),
    ("spearman NaN", lambda: sentence_similarity.spearman([1, math.nan, 3], [1, 2, 3]), ValueError, r"^x: expected finite numbers, got 1 NaN or inf"),
    ("spearman inf", lambda: sentence_similarity.spearman([1, 2, 3], [1, math.inf, 3]), ValueError, r"^y: expected finite numbers, got 1 NaN or inf"),
    ("spearman 2-D", lambda: sentence_similarity.spearman([[1, 2], [3, 4]], [1, 2, 3, 4]), ValueError, r"^x: expected a 1-D sequence of numbers, got shape \(2, 2\)"),
    ("spearman str", lambda: sentence_similarity.spearman("abc", [1, 2, 3]), ValueError, r"^x: expected a 1-D sequence of numbers, got str"),
    ("roc_auc 2-D", lambda: sentence_similarity.roc_auc([[0.1, 0.2], [0.3, 0.4]], [0, 1, 0, 1]), ValueError, r"^scores: expected a 1-D sequence of numbers, got shape \(2, 2\)"),
    ("roc_auc empty", lambda: sentence_similarity.roc_auc([], []), ValueError, r"^scores: expected at least one positive and one negative score, got none"),
    ("rewrite rng int", lambda: similarity_pairs.rewrite("A value is given.", 0), ValueError, r"^rng: expected a random\.Random, got int 0"),
    ("rewrite ''", lambda: similarity_pairs.rewrite("", random.Random(0)), ValueError, r"^sentence: expected a sentence ending in '\.', got str ''"),
    ("rewrite int", lambda: similarity_pairs.rewrite(5, random.Random(0)), ValueError, r"^sentence: expected a sentence ending in '\.', got int 5"),
]

# ---------------------------------------------------------------------------- synthetic data
_topic = corpus.TOPICS[0]
DATA = [
    ("Topic objects one str", lambda: corpus.Topic("x", "carrot", ("kitchen",), ("a",)), ValueError, r"^objects: expected a non-empty tuple of str, got str 'carrot'"),
    ("Document sentences one str", lambda: corpus.Document("t", "one. two."), ValueError, r"^sentences: expected a list of str, got str 'one\. two\.'"),
    ("make_document n_sentences -2", lambda: corpus.make_document(random.Random(0), _topic, -2), ValueError, r"^n_sentences: expected a positive int, got -2"),
    ("make_document n_sentences 2.5", lambda: corpus.make_document(random.Random(0), _topic, 2.5), ValueError, r"^n_sentences: expected a positive int, got float 2\.5"),
    ("make_document rng int", lambda: corpus.make_document(0, _topic, 3), ValueError, r"^rng: expected a random\.Random, got int 0"),
    ("make_document topic str", lambda: corpus.make_document(random.Random(0), "kitchen", 3), ValueError, r"^topic: expected a Topic .*got str 'kitchen'"),
    ("make_document min_steps 0", lambda: corpus.make_document(random.Random(0), _topic, 3, min_steps=0), ValueError, r"^min_steps: expected a positive int, got 0"),
    ("make_documents seed 1.5", lambda: corpus.make_documents(2, seed=1.5), ValueError, r"^seed: expected an int, a random\.Random or a torch\.Generator, got float 1\.5"),
    ("make_documents n_docs 2.5", lambda: corpus.make_documents(2.5), ValueError, r"^n_docs: expected an int, got float 2\.5"),
    ("make_documents n_docs '3'", lambda: corpus.make_documents("3"), ValueError, r"^n_docs: expected an int, got str '3'"),
    ("make_documents topics ()", lambda: corpus.make_documents(2, topics=()), ValueError, r"^topics: expected a non-empty tuple of Topic, got tuple"),
    ("make_documents one Topic", lambda: corpus.make_documents(2, topics=_topic), ValueError, r"^topics: expected a non-empty tuple of Topic, got Topic \(wrap one topic"),
    ("corpus_vocab topics str", lambda: corpus.corpus_vocab("kitchen"), ValueError, r"^topics: expected a non-empty tuple of Topic, got str"),
    ("MarkovLanguage ones(3, 4)", lambda: markov.MarkovLanguage(torch.ones(3, 4)), ValueError, r"^transitions: expected a square \(V, V\) matrix, got shape \(3, 4\)"),
    ("MarkovLanguage rows sum 3", lambda: markov.MarkovLanguage(torch.ones(3, 3)), ValueError, r"^transitions: expected a row-stochastic matrix .*got row sums in \[3, 3\]"),
    ("MarkovLanguage zero row", lambda: markov.MarkovLanguage(torch.tensor([[1.0, 0.0], [0.0, 0.0]])), ValueError, r"^transitions: expected a row-stochastic matrix .*got row sums in \[0, 1\]"),
    ("MarkovLanguage list", lambda: markov.MarkovLanguage([[1.0]]), ValueError, r"^transitions: expected a torch\.Tensor, got list"),
    ("make_markov_language 5.5", lambda: markov.make_markov_language(5.5, 2, _G()), ValueError, r"^vocab_size: expected a positive int, got float 5\.5"),
    ("sample_markov offset -3", lambda: markov.sample_markov(markov.make_markov_language(5, 2, _G()), 2, 4, _G(), offset=-3), ValueError, r"^offset: expected an int >= 0, got -3"),
    ("sample_markov offset 1.5", lambda: markov.sample_markov(markov.make_markov_language(5, 2, _G()), 2, 4, _G(), offset=1.5), ValueError, r"^offset: expected an int, got float 1\.5"),
    ("sample_markov n 2.0", lambda: markov.sample_markov(markov.make_markov_language(5, 2, _G()), 2.0, 4, _G()), ValueError, r"^n: expected a positive int, got float 2\.0"),
    ("sample_markov language tensor", lambda: markov.sample_markov(torch.eye(3), 2, 4, _G()), ValueError, r"^language: expected a MarkovLanguage .*got Tensor"),
    ("make_batch vocab_size 20.5", lambda: tasks.make_batch("copy", 2, 4, 20.5, _G()), ValueError, r"^vocab_size: expected an int, got float 20\.5"),
    ("as_lm_batch tuple", lambda: tasks.as_lm_batch((1, 2)), ValueError, r"^batch: expected a SeqBatch .*got tuple"),
    ("SeqBatch batch sizes", lambda: tasks.SeqBatch(*(torch.zeros(b, 3, dtype=torch.long) for b in (2, 3, 2, 2))), ValueError, r"^target: batch size 3 differs from src's 2"),
    ("make_spirals turns NaN", lambda: toy.make_spirals(10, _G(), turns=math.nan), ValueError, r"^turns: expected a finite number, got nan"),
    ("make_spirals turns inf", lambda: toy.make_spirals(10, _G(), turns=math.inf), ValueError, r"^turns: expected a finite number, got inf"),
    ("make_spirals noise NaN", lambda: toy.make_spirals(10, _G(), noise=math.nan), ValueError, r"^noise: expected a finite number, got nan"),
    ("make_spirals turns '1.5'", lambda: toy.make_spirals(10, _G(), turns="1.5"), ValueError, r"^turns: expected a finite number, got str '1\.5'"),
]

# ---------------------------------------------------------------- quantization, fast inference
_w = torch.randn(4, 6, generator=_G())
_lin = nn.Linear(6, 4)
QUANTIZATION = [
    ("quantization_error zeros", lambda: quantization.quantization_error(torch.zeros(2, 2), True), ValueError, r"^weight: expected a matrix with a non-zero entry, got all zeros"),
    ("quantization_error per_channel 'yes'", lambda: quantization.quantization_error(_w, "yes"), ValueError, r"^per_channel: expected a bool, got str 'yes'"),
    ("quantize_per_tensor empty", lambda: quantization.quantize_per_tensor_int8(torch.randn(0, 4)), ValueError, r"^weight: expected a non-empty tensor, got shape \(0, 4\)"),
    ("dequantize float q", lambda: quantization.dequantize_int8(_w, torch.tensor(0.1)), ValueError, r"^q: expected int8 values .*got torch\.float32"),
    ("dequantize NaN scale", lambda: quantization.dequantize_int8(torch.ones(4, 6, dtype=torch.int8), torch.tensor(math.nan)), ValueError, r"^scale: expected finite values > 0, got values in \[nan, nan\]"),
    ("dequantize negative scale", lambda: quantization.dequantize_int8(torch.ones(4, 6, dtype=torch.int8), -torch.ones(4)), ValueError, r"^scale: expected finite values > 0, got values in \[-1\.0, -1\.0\]"),
    ("quantize_int8 tensor", lambda: quantization.quantize_int8(_w, True), ValueError, r"^model: expected an nn\.Module, got Tensor"),
    ("pad_batch []", lambda: fast_inference.pad_batch([]), ValueError, r"^encodings: expected at least one encoding, got an empty list"),
    ("pad_batch one dict", lambda: fast_inference.pad_batch(_tok.encode("hi")), ValueError, r"^encodings: expected a list of tokenizer outputs .*got dict"),
    ("pad_batch no token_type_ids", lambda: fast_inference.pad_batch([{"input_ids": [1], "attention_mask": [1]}]), ValueError, r"^encodings\[0\]: expected a dict with keys .*token_type_ids.*got \['attention_mask', 'input_ids'\]"),
    ("pad_batch a padded batch", lambda: fast_inference.pad_batch([_tok(["hi", "the cat"])]), ValueError, r"^encodings\[0\]: expected one text's ids \(a list\), got input_ids of shape \(2, 4\)"),
    ("OnnxEncoder missing file", lambda: fast_inference.OnnxEncoder("/nonexistent.onnx"), FileNotFoundError, r"^path: expected an ONNX file .*got '/nonexistent\.onnx', which is no file"),
    ("pad_batch pad_id -1", lambda: fast_inference.pad_batch([_tok.encode("hi")], pad_id=-1), ValueError, r"^pad_id: expected an int >= 0, got -1"),
    ("pad_batch pad_id 1.5", lambda: fast_inference.pad_batch([_tok.encode("hi")], pad_id=1.5), ValueError, r"^pad_id: expected an int, got float 1\.5"),
    ("time_interleaved {}", lambda: fast_inference.time_interleaved({}), ValueError, r"^runs: expected a non-empty dict name -> function, got dict \(empty\)"),
    ("time_interleaved repeats 0", lambda: fast_inference.time_interleaved({"a": lambda: None}, repeats=0), ValueError, r"^repeats: expected a positive int, got 0"),
    ("time_interleaved not callable", lambda: fast_inference.time_interleaved({"a": 1}), ValueError, r"^runs\['a'\]: expected a function to time, got int"),
    ("paired_ratio unknown case", lambda: fast_inference.paired_ratio({"a": [1.0]}, "a", "b"), ValueError, r"^case: expected one of \['a'\], got 'b'"),
    ("paired_ratio zero time", lambda: fast_inference.paired_ratio({"a": [1.0], "b": [0.0]}, "a", "b"), ValueError, r"^times\['b'\]\[0\]: expected a time > 0, got 0\.0"),
    ("paired_ratio lengths", lambda: fast_inference.paired_ratio({"a": [1.0, 2.0], "b": [1.0]}, "a", "b"), ValueError, r"^times\['b'\]: expected 2 rounds like times\['a'\], got 1"),
    ("spread one value", lambda: fast_inference.spread([1.0]), ValueError, r"^values: expected at least 2 value\(s\), got 1"),
    ("median str", lambda: fast_inference.median("abc"), ValueError, r"^values: expected a list of numbers, got str"),
    ("median NaN", lambda: fast_inference.median([math.nan, 1.0, 2.0]), ValueError, r"^values\[0\]: expected a finite number, got float nan"),
    ("forward_flops seq_len -4", lambda: fast_inference.forward_flops(_lin, -4), ValueError, r"^seq_len: expected a positive int, got -4"),
    ("first_layers 1.5", lambda: fast_inference.first_layers(_lin, 1.5), ValueError, r"^num_layers: expected an int, got float 1\.5"),
    ("first_layers Linear", lambda: fast_inference.first_layers(_lin, 1), ValueError, r"^model: expected a course BertModel \(\.layers\) or a Hugging Face BertModel .*got Linear"),
    ("LowRankLinear rank 2.5", lambda: fast_inference.LowRankLinear(_lin, 2.5), ValueError, r"^rank: expected a positive int, got float 2\.5"),
    ("LowRankLinear rank True", lambda: fast_inference.LowRankLinear(_lin, True), ValueError, r"^rank: expected a positive int, got bool True"),
    ("LowRankLinear Embedding", lambda: fast_inference.LowRankLinear(nn.Embedding(4, 6), 2), ValueError, r"^linear: expected an nn\.Linear, got Embedding"),
    ("LowRankLinear x width", lambda: fast_inference.LowRankLinear(_lin, 2)(torch.randn(2, 4)), ValueError, r"^x: expected size 6 at dim -1 \(in_features\), got shape \(2, 4\)"),
    ("LowRankLinear x float64", lambda: fast_inference.LowRankLinear(_lin, 2)(torch.randn(2, 6, dtype=torch.float64)), ValueError, r"^x: expected dtype torch\.float32 .*got torch\.float64"),
    ("state_digest tensor", lambda: fast_inference.state_digest(_w), ValueError, r"^model: expected an nn\.Module, got Tensor"),
    ("size_on_disk state_dict", lambda: fast_inference.size_on_disk(_lin.state_dict()), ValueError, r"^model: expected an nn\.Module, got OrderedDict"),
    ("embed tensor batch", lambda: fast_inference.embed(_lin, IDS), ValueError, r"^batch: expected a dict of input_ids and attention_mask \(B, T\), got Tensor"),
]

# -------------------------------------------------------------------------------- pretraining
_batcher = PairBatcher(_DOCS, corpus.corpus_tokenizer())
PRETRAINING = [
    ("PretrainConfig steps -1", lambda: pretraining.PretrainConfig(steps=-1), ValueError, r"^steps: expected a positive int, got -1"),
    ("PretrainConfig lr NaN", lambda: pretraining.PretrainConfig(lr=math.nan), ValueError, r"^lr: expected a finite number, got nan"),
    ("PretrainConfig mask_ratio 1.5", lambda: pretraining.PretrainConfig(mask_ratio=1.5), ValueError, r"^mask_ratio: expected a number <= 1\.0, got 1\.5"),
    ("PretrainConfig batch_size 0", lambda: pretraining.PretrainConfig(batch_size=0), ValueError, r"^batch_size: expected a positive int, got 0"),
    ("PretrainConfig heads 5", lambda: pretraining.PretrainConfig(num_attention_heads=5), ValueError, r"^hidden_size=64 must be divisible by num_attention_heads=5"),
    ("PretrainConfig split of 2", lambda: pretraining.PretrainConfig(mask_prob_split=(0.8, 0.2)), ValueError, r"^mask_prob_split: expected three shares .*got \(0\.8, 0\.2\)"),
    ("PretrainConfig n_docs 1", lambda: pretraining.PretrainConfig(n_docs=1), ValueError, r"^n_docs: expected an int >= 2, got 1"),
    ("pretrain num_threads 0", lambda: pretraining.pretrain(pretraining.PretrainConfig(**_TINY), num_threads=0), ValueError, r"^num_threads: expected a positive int, got 0"),
    ("pretrain config dict", lambda: pretraining.pretrain({"steps": 1}), ValueError, r"^config: expected a PretrainConfig, got dict"),
    ("cache_key seed None", lambda: pretraining.cache_key(pretraining.PretrainConfig(), None), ValueError, r"^seed: expected an int, got NoneType"),
    ("cache_path device_type gpu", lambda: pretraining.cache_path(pretraining.PretrainConfig(), 0, "/tmp", "gpu"), ValueError, r"^device_type: expected a torch device type such as 'cpu' or 'cuda', got 'gpu'"),
    ("pretraining_losses n_pairs 0", lambda: pretraining.pretraining_losses(None, None, None, 0, 0), ValueError, r"^out: expected a BertForPreTraining output"),
    ("PairBatcher docs one str", lambda: PairBatcher("some text", corpus.corpus_tokenizer()), ValueError, r"^docs: expected a list of Documents or of lists of sentence strings, got str"),
    ("PairBatcher BPETokenizer", lambda: PairBatcher(_DOCS, tokenization.BPETokenizer(["[UNK]"], [])), ValueError, r"^tokenizer: expected a course_lib\.tokenization\.WordPieceTokenizer, got BPETokenizer"),
    ("PairBatcher.batch 0", lambda: _batcher.batch(0, random.Random(0)), ValueError, r"^batch_size: expected a positive int, got 0"),
    ("PairBatcher.batch rng int", lambda: _batcher.batch(2, 0), ValueError, r"^rng: expected a random\.Random, got int 0"),
    ("PairBatcher.masked_batch generator int", lambda: _batcher.masked_batch(2, random.Random(0), 0), ValueError, r"^mask_generator: expected a torch\.Generator, got int 0"),
    ("main argv str", lambda: pretraining_cli.main("--help"), ValueError, r"^argv: expected a list of str .*got one str '--help'"),
]


def _pretraining_losses_cases():
    from course_lib.bert import BertForPreTraining
    model = BertForPreTraining(pretraining.PretrainConfig(**_TINY).bert_config(20)).eval()
    ids = torch.randint(5, 20, (2, 4), generator=_G())
    out = model(ids)
    labels = torch.full((2, 4), -100)
    return [
        ("pretraining_losses n_pairs 0", lambda: pretraining.pretraining_losses(out, labels, torch.tensor([0, 1]), 0, 0), ValueError, r"^n_pairs: expected a positive int, got 0"),
        ("pretraining_losses labels 10000", lambda: pretraining.pretraining_losses(out, torch.full((2, 4), 10000), torch.tensor([0, 1]), 8, 2),
         ValueError, r"^labels: expected ids in \[0, vocab_size=20\) or -100, got values in \[10000, 10000\]"),
        ("pretraining_losses nsp label 2", lambda: pretraining.pretraining_losses(out, labels, torch.tensor([0, 2]), 0, 2),
         ValueError, r"^next_sentence_label: expected 0 \(is next\) or 1 \(not next\), got values \[0, 2\]"),
        ("evaluate n_pairs -5", lambda: pretraining.evaluate(model, corpus.corpus_tokenizer(), _DOCS, n_pairs=-5), ValueError, r"^n_pairs: expected a positive int, got -5"),
        ("evaluate batch_size 0", lambda: pretraining.evaluate(model, corpus.corpus_tokenizer(), _DOCS, batch_size=0), ValueError, r"^batch_size: expected a positive int, got 0"),
        ("evaluate mask_ratio 2", lambda: pretraining.evaluate(model, corpus.corpus_tokenizer(), _DOCS, mask_ratio=2), ValueError, r"^mask_ratio: expected a number <= 1\.0, got 2"),
        ("evaluate BertModel", lambda: pretraining.evaluate(model.bert, corpus.corpus_tokenizer(), _DOCS), ValueError, r"^model: expected a BertForPreTraining .*got BertModel"),
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
