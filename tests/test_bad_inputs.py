"""Bad inputs to the public API raise an error that starts with the argument's name and says what
was expected and what came; valid edge inputs still work (the end of this file).

One table per `course_lib` module, keyed by the module's name in `BAD_INPUTS` (alphabetical), and
one runner, `test_bad_input_raises_naming_the_argument`. To add a case, add a row to its module's
table (a module without a table gets one, under its own heading).

Each row: (case id, a call that must fail, the message as a regex) for a ValueError, or (case id,
a call, the exception type, the regex) for another type. The regexes check the argument's name
first and both sides of the comparison, so a message that names the wrong argument, or whose
"expected" and "got" read the same, fails here.

Checks sit where a user enters (CONTRIBUTING.md, "Style"): the models' forwards, the configs, the
public functions a lesson calls. Inner layers (attention inside an encoder layer, the FFN, a
LayerNorm) check nothing that PyTorch's own error already says, and an argument that Python's or
PyTorch's own error already names, or that only the library itself passes, has no row.
"""
import importlib.util
import math
import random

import numpy as np
import pytest
import torch
from torch import nn

from course_lib import (albert, bert, cache, complexity, device, distillation, embedding, evidence,
                        feedforward, layernorm, long_text, masking, model_surgery, permutation_masks,
                        pooling, positional, pretraining, pretraining_cli, quantization, quiz, schedules,
                        self_attention, sentence_pairs, sentence_similarity, span_corruption,
                        timing, tokenization, training, transformer, transformer_xl, weight_tying)
from course_lib.attention import MultiHeadAttention, scaled_dot_product_attention, split_heads
from course_lib.data import corpus, markov, similarity_pairs, tasks, toy
from course_lib.pretraining_batches import PairBatcher

pytestmark = pytest.mark.unit

# ------------------------------------------------------------------ inputs several tables use
x3 = torch.randn(2, 5, 8)
IDS = torch.tensor([[5, 6, 7]])
_G = lambda: torch.Generator().manual_seed(0)
_DOCS = corpus.make_documents(3, seed=0)
BAD_SIZES = [(0, r"0"), (-4, r"-4"), (2.5, r"float 2\.5"), ("8", r"str '8'"), (True, r"bool True")]


def sizes(label, make, names_and_kwargs):
    """Rows for a constructor: each size argument set to 0, negative, a float, a str, a bool."""
    rows = []
    for name, kwargs in names_and_kwargs:
        for value, shown in BAD_SIZES:
            rows.append((f"{label} {name}={value!r}", lambda kw=kwargs, n=name, v=value: make(**{**kw, n: v}),
                         rf"^{name}: expected a positive int, got .*{shown}"))
    return rows


# A BERT of hidden size 8 (one layer) for the forwards, one of hidden size 16 (two layers) for
# checkpoints, ALBERT and distillation
_bcfg = dict(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
             max_position_embeddings=16)
_bert = bert.BertModel(bert.BertConfig(**_bcfg))
_pre = bert.BertForPreTraining(bert.BertConfig(**_bcfg))
_ids = torch.randint(5, 50, (2, 6))
_bcfg16 = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
               max_position_embeddings=16)
_cfg16 = bert.BertConfig(**_bcfg16)
_bert16 = bert.BertModel(_cfg16).eval()

# ---------------------------------------------------------------------------------------- albert
_acfg = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
             max_position_embeddings=16, embedding_size=8)
ALBERT = [
    ("AlbertConfig embedding_size 2.5", lambda: albert.AlbertConfig(**{**_acfg, "embedding_size": 2.5}),
     r"^embedding_size: expected a positive int, got float 2\.5"),
    ("AlbertConfig embedding_size '8'", lambda: albert.AlbertConfig(**{**_acfg, "embedding_size": "8"}),
     r"^embedding_size: expected a positive int, got str '8'"),
    ("AlbertConfig num_hidden_groups True", lambda: albert.AlbertConfig(**_acfg, num_hidden_groups=True),
     r"^num_hidden_groups: expected a positive int, got bool True"),
    ("meta_model instance", lambda: albert.meta_model(_bert16, _cfg16), r"^cls: expected a model class .*got BertModel"),
    ("AlbertModel BertConfig", lambda: albert.AlbertModel(_cfg16), r"^config: expected an AlbertConfig .*got BertConfig"),
    ("from_hf_state_dict unknown part", lambda: albert.from_hf_state_dict(
        albert.AlbertConfig(**_acfg), {"encoder.albert_layer_groups.0.albert_layers.0.foo.weight": torch.ones(1)}),
     r"^state_dict: unexpected Hugging Face ALBERT key '.*foo\.weight'"),
    ("from_hf_state_dict short key", lambda: albert.from_hf_state_dict(
        albert.AlbertConfig(**_acfg), {"encoder.albert_layer_groups.0": torch.ones(1)}), r"^state_dict: unexpected Hugging Face ALBERT key 'encoder\.albert_layer_groups\.0'"),
    ("from_hf_state_dict empty", lambda: albert.from_hf_state_dict(albert.AlbertConfig(**_bcfg16, embedding_size=8), {}), r"^state_dict: \d+ tensor\(s\) missing for this AlbertModel"),
]

# ------------------------------------------------------------------------------------- attention
mha = MultiHeadAttention(8, 2)
q = torch.randn(2, 4, 8)
ATTENTION = [
    ("mask float", lambda: scaled_dot_product_attention(x3, x3, x3, torch.ones(5, 5)), r"^mask: .*torch\.bool.*float32"),
    ("mask wrong shape", lambda: scaled_dot_product_attention(x3, x3, x3, torch.ones(4, 5, dtype=torch.bool)),
     r"^mask: shape \(4, 5\) does not broadcast to \(2, 5, 5\)"),
    ("mask too many dims", lambda: scaled_dot_product_attention(x3, x3, x3, torch.ones(3, 2, 5, 5, dtype=torch.bool)),
     r"^mask: shape \(3, 2, 5, 5\)"),
    ("n_heads does not divide", lambda: MultiHeadAttention(10, 3), r"^d_model=10 must be divisible by n_heads=3"),
    ("n_heads 0", lambda: MultiHeadAttention(8, 0), r"^d_model=8 must be divisible by n_heads=0"),
    ("mha dropout 1.5", lambda: MultiHeadAttention(8, 2, dropout=1.5), r"^dropout: expected a number <= 1\.0, got 1\.5"),
    ("mha dropout -0.1", lambda: MultiHeadAttention(8, 2, dropout=-0.1), r"^dropout: expected a number >= 0\.0, got -0\.1"),
    ("mha dropout nan", lambda: MultiHeadAttention(8, 2, dropout=math.nan), r"^dropout: expected a finite number, got nan"),
    ("mha mask float", lambda: mha(x3, x3, x3, torch.ones(2, 1, 5, 5)), r"^mask: expected dtype torch\.bool"),
    ("mha mask shape", lambda: mha(x3, x3, x3, torch.ones(2, 1, 5, 4, dtype=torch.bool)),
     r"^mask: shape \(2, 1, 5, 4\) does not broadcast to \(2, 2, 5, 5\)"),
    ("split_heads divisibility", lambda: split_heads(x3, 3), r"^d_model=8 must be divisible by n_heads=3"),
    ("sdpa scale nan", lambda: scaled_dot_product_attention(q, q, q, scale=math.nan), r"^scale: expected a finite number, got nan"),
    ("sdpa scale -1", lambda: scaled_dot_product_attention(q, q, q, scale=-1.0), r"^scale: expected a number > 0\.0, got -1\.0"),
    ("sdpa scale 'auto'", lambda: scaled_dot_product_attention(q, q, q, scale="auto"), r"^scale: expected a finite number, got str 'auto'"),
]

# -------------------------------------------------------------------------------------------- bert
BERT = sizes("BertConfig", lambda **kw: bert.BertConfig(**kw),
             [(n, _bcfg) for n in ("vocab_size", "hidden_size", "num_attention_heads", "intermediate_size",
                                   "max_position_embeddings", "type_vocab_size")])
BERT += [
    ("BertConfig hidden_dropout_prob 1.5", lambda: bert.BertConfig(**_bcfg, hidden_dropout_prob=1.5), r"^hidden_dropout_prob: expected a number <= 1\.0, got 1\.5"),
    ("BertConfig attention dropout -1", lambda: bert.BertConfig(**_bcfg, attention_probs_dropout_prob=-1), r"^attention_probs_dropout_prob: expected a number >= 0\.0, got -1"),
    ("BertConfig layer_norm_eps 0", lambda: bert.BertConfig(**_bcfg, layer_norm_eps=0.0), r"^layer_norm_eps: expected a number > 0\.0, got 0\.0"),
    ("BertConfig pad_token_id 50", lambda: bert.BertConfig(**_bcfg, pad_token_id=50), r"^pad_token_id: expected an id in \[0, vocab_size=50\), got 50"),
    ("BertConfig num_hidden_layers -2", lambda: bert.BertConfig(**{**_bcfg, "num_hidden_layers": -2}), r"^num_hidden_layers: expected an int >= 0, got -2"),
    ("BertConfig initializer_range -0.02", lambda: bert.BertConfig(**_bcfg, initializer_range=-0.02), r"^initializer_range: expected a number >= 0\.0, got -0\.02"),
    ("BertConfig hidden_act", lambda: bert.BertConfig(**_bcfg, hidden_act="swish"), r"^hidden_act: expected one of .*got 'swish'"),
    ("BertModel input_ids list", lambda: _bert(_ids.tolist()), r"^input_ids: expected a torch\.Tensor, got list"),
    ("BertModel attention_mask list", lambda: _bert(_ids, attention_mask=[[1] * 6] * 2), r"^attention_mask: expected a torch\.Tensor, got list"),
    ("BertModel token_type_ids list", lambda: _bert(_ids, token_type_ids=[[0] * 6] * 2), r"^token_type_ids: expected a torch\.Tensor, got list"),
    ("BertModel id 50", lambda: _bert(torch.full((2, 6), 50)), r"^input_ids: ids must be in \[0, vocab_size=50\), got values in \[50, 50\]"),
    ("BertModel id -1", lambda: _bert(torch.full((2, 6), -1)), r"^input_ids: ids must be in \[0, vocab_size=50\), got values in \[-1, -1\]"),
    ("BertModel segment 2", lambda: _bert(_ids, torch.full_like(_ids, 2)), r"^token_type_ids: ids must be in \[0, type_vocab_size=2\), got values in \[2, 2\]"),
    ("BertModel input_ids rank 1", lambda: _bert(torch.ones(6, dtype=torch.long)), r"^input_ids: expected a 2-D tensor \(B, T\), got shape \(6,\)"),
    ("BertModel input_ids float", lambda: _bert(torch.ones(2, 6)), r"^input_ids: expected integer ids .*got dtype torch\.float32"),
    ("BertModel too long", lambda: _bert(torch.ones(1, 17, dtype=torch.long)), r"^input_ids: sequence length 17 exceeds max_position_embeddings=16"),
    ("BertModel mask shape", lambda: _bert(_ids, attention_mask=torch.ones(2, 5, dtype=torch.long)),
     r"^attention_mask: expected shape \(2, 6\) \(B, T\) like input_ids, got \(2, 5\)"),
    ("BertModel mask values", lambda: _bert(_ids, attention_mask=torch.full((2, 6), 3)), r"^attention_mask: expected only 0 \(padding\) and 1 \(token\) values"),
    ("BertModel token_type shape", lambda: _bert(_ids, torch.zeros(2, 5, dtype=torch.long)), r"^token_type_ids: expected shape \(2, 6\) like input_ids, got \(2, 5\)"),
    ("pretraining labels -1", lambda: _pre(_ids, labels=torch.full_like(_ids, -1)), r"^labels: ids must be in \[0, vocab_size=50\) or -100, got values in \[-1, -1\]"),
    ("pretraining labels 50", lambda: _pre(_ids, labels=torch.full_like(_ids, 50)), r"^labels: ids must be in \[0, vocab_size=50\) or -100, got values in \[50, 50\]"),
    ("pretraining labels float", lambda: _pre(_ids, labels=torch.zeros(2, 6)), r"^labels: expected integer ids .*got dtype torch\.float32"),
    ("pretraining labels shape", lambda: _pre(_ids, labels=torch.zeros(2, 5, dtype=torch.long)), r"^labels: expected shape \(2, 6\) like prediction_logits without V, got \(2, 5\)"),
    ("pretraining nsp label 2", lambda: _pre(_ids, next_sentence_label=torch.tensor([0, 2])), r"^next_sentence_label: ids must be in \[0, num_classes=2\) or -100, got values in \[0, 2\]"),
    ("pretraining nsp label -1", lambda: _pre(_ids, next_sentence_label=torch.tensor([-1, 0])), r"^next_sentence_label: ids must be in \[0, num_classes=2\) or -100, got values in \[-1, 0\]"),
    ("pretraining nsp label shape", lambda: _pre(_ids, next_sentence_label=torch.tensor([0, 1, 0])), r"^next_sentence_label: expected shape \(2,\) like the batch \(B,\), got \(3,\)"),
    ("pretraining nsp label list", lambda: _pre(_ids, next_sentence_label=[0, 1]), r"^next_sentence_label: expected a torch\.Tensor, got list"),
    ("mlm_cross_entropy label 7", lambda: bert.mlm_cross_entropy(torch.randn(2, 3, 7), torch.full((2, 3), 7)), r"^labels: ids must be in \[0, vocab_size=7\) or -100, got values in \[7, 7\]"),
    ("mlm_cross_entropy label shape", lambda: bert.mlm_cross_entropy(torch.randn(2, 3, 7), torch.zeros(2, 4, dtype=torch.long)),
     r"^labels: expected shape \(2, 3\) like prediction_logits without V, got \(2, 4\)"),
    ("mlm_cross_entropy logits rank 1", lambda: bert.mlm_cross_entropy(torch.randn(7), torch.zeros(1, dtype=torch.long)),
     r"^labels: expected shape \(\) like prediction_logits without V, got \(1,\)"),
]
_hf16 = {k: v for k, v in _bert16.to_hf_state_dict().items()}
BERT += [
    ("BertModel T=0", lambda: _bert16(torch.zeros(2, 0, dtype=torch.long)), r"^input_ids: expected at least one position, got shape \(2, 0\)"),
    ("BertModel dict config", lambda: bert.BertModel(dict(_bcfg16)), r"^config: expected a BertConfig, got dict"),
    ("BertConfig.from_dict list", lambda: bert.BertConfig.from_dict([("vocab_size", 10)]), r"^d: expected a dict .*got list"),
    ("hf_to_course_state_dict key beyond num_layers", lambda: bert.hf_to_course_state_dict(
        {"encoder.layer.1.attention.self.query.weight": torch.ones(1)}, 1), r"^state_dict: unexpected .*'encoder\.layer\.1\..*\(num_layers=1\)"),
    ("BertModel.from_hf_state_dict empty", lambda: bert.BertModel.from_hf_state_dict(_cfg16, {}), r"^state_dict: \d+ tensor\(s\) missing for this BertModel config, e\.g\. \['embeddings"),
    ("BertModel.from_hf_state_dict course keys", lambda: bert.BertModel.from_hf_state_dict(_cfg16, _bert16.state_dict()), r"^state_dict: 32 tensor\(s\) missing .*or a course \(not Hugging Face\) state dict\?"),
    ("BertModel.from_hf_state_dict other size", lambda: bert.BertModel.from_hf_state_dict(bert.BertConfig(**{**_bcfg16, "vocab_size": 60}), _hf16),
     r"^state_dict: 1 tensor\(s\) of another shape \(checkpoint vs model\) .*embeddings\.word_embeddings\.weight \(50, 16\) vs \(60, 16\)"),
]

# ------------------------------------------------------------------------------------------- cache
CACHE = [
    ("source_modules missing", lambda: cache.source_modules("/nonexistent.py"), r"^entry_points: expected existing source files, got '/nonexistent\.py'"),
    ("cache_key tensor", lambda: cache.cache_key({"w": torch.zeros(2000)}), r"^inputs: expected JSON-like values, got a Tensor of shape \(2000,\)"),
    ("cache_key length 0", lambda: cache.cache_key({"a": 1}, length=0), r"^length: expected an int >= 1, got 0"),
    ("cache_dir escapes", lambda: cache.cache_dir("../escape", root="/tmp/never-created-root"), r"^name: expected a non-empty relative folder name .*got '\.\./escape'"),
    ("cache_dir ''", lambda: cache.cache_dir("", root="/tmp/never-created-root"), r"^name: expected a non-empty relative folder name .*got ''"),
    ("cache_dir absolute", lambda: cache.cache_dir("/etc", root="/tmp/never-created-root"), r"^name: .*got '/etc'"),
]

# -------------------------------------------------------------------------------------- complexity
COMPLEXITY = [
    ("fit_power_law value 0", lambda: complexity.fit_power_law([0, 4, 16], n=[1, 2, 4]), r"^values: expected 3 or more positive finite numbers .*got \[0\.0, 4\.0, 16\.0\]"),
    ("fit_power_law value nan", lambda: complexity.fit_power_law([1, math.nan, 16], n=[1, 2, 4]), r"^values: expected 3 or more positive finite numbers .*got \[1\.0, nan, 16\.0\]"),
    ("fit_power_law n 0", lambda: complexity.fit_power_law([1, 4, 16], n=[0, 2, 4]), r"^n: expected 3 or more positive finite numbers .*got \[0\.0, 2\.0, 4\.0\]"),
    ("fit_power_law values scalar", lambda: complexity.fit_power_law(4.0, n=2.0), r"^values: expected 2 or more positive finite numbers .*got 4\.0"),
]

# ------------------------------------------------------------------------------------- data.corpus
DATA_CORPUS = [
    ("Topic objects one str", lambda: corpus.Topic("x", "carrot", ("kitchen",), ("a",)), r"^objects: expected a list of str, got one str 'carrot'"),
    ("make_documents seed 1.5", lambda: corpus.make_documents(2, seed=1.5), r"^seed: expected an int, a random\.Random or a torch\.Generator, got float 1\.5"),
]

# ------------------------------------------------------------------------------------- data.markov
DATA_MARKOV = [
    ("sample_markov offset -3", lambda: markov.sample_markov(markov.make_markov_language(5, 2, _G()), 2, 4, _G(), offset=-3), r"^offset: expected an int >= 0, got -3"),
    ("sample_markov offset 1.5", lambda: markov.sample_markov(markov.make_markov_language(5, 2, _G()), 2, 4, _G(), offset=1.5), r"^offset: expected an int, got float 1\.5"),
]

# --------------------------------------------------------------------------- data.similarity_pairs
DATA_SIMILARITY_PAIRS = [
    ("rewrite rng int", lambda: similarity_pairs.rewrite("A value is given.", 0), r"^rng: expected a random\.Random, got int 0"),
    ("rewrite ''", lambda: similarity_pairs.rewrite("", random.Random(0)), r"^sentence: expected a sentence ending in '\.', got str ''"),
    ("rewrite int", lambda: similarity_pairs.rewrite(5, random.Random(0)), r"^sentence: expected a sentence ending in '\.', got int 5"),
]

# ------------------------------------------------------------------------------------------ device
DEVICE = [
    ("seed_everything -1", lambda: device.seed_everything(-1), r"^seed: expected an int in \[0, 2\*\*32 - 1\], got int -1"),
    ("seed_everything 2**40", lambda: device.seed_everything(2 ** 40), r"^seed: expected an int in \[0, 2\*\*32 - 1\], got int 1099511627776"),
    ("seed_everything 1.5", lambda: device.seed_everything(1.5), r"^seed: expected an int in \[0, 2\*\*32 - 1\], got float 1\.5"),
    ("limit_threads 1.7", lambda: device.limit_threads(1.7), r"^threads: expected a positive int, got float 1\.7"),
    ("limit_threads '1'", lambda: device.limit_threads("1"), r"^threads: expected a positive int, got str '1'"),
    ("limit_threads 0", lambda: device.limit_threads(0), r"^threads: expected a positive int, got int 0"),
    ("requested_threads 0", lambda: device.requested_threads(0), r"^default: expected a positive int, got int 0"),
]

# ------------------------------------------------------------------------------------ distillation
s, t = torch.randn(4, 3), torch.randn(4, 3)
_labels = torch.tensor([0, 1, 2, 0])
DISTILLATION = [
    ("soft_target_loss T inf", lambda: distillation.soft_target_loss(s, t, temperature=math.inf), r"^temperature: expected a finite number, got inf"),
    ("distillation_loss T inf", lambda: distillation.distillation_loss(s, t, _labels, temperature=math.inf), r"^temperature: expected a finite number, got inf"),
    ("BertClassifier num_labels 0", lambda: distillation.BertClassifier(_bert16, 0), r"^num_labels: expected a positive int, got 0"),
    ("BertClassifier num_labels -1", lambda: distillation.BertClassifier(_bert16, -1), r"^num_labels: expected a positive int, got -1"),
    ("BertClassifier num_labels 2.0", lambda: distillation.BertClassifier(_bert16, 2.0), r"^num_labels: expected a positive int, got float 2\.0"),
    ("every_other_layer True", lambda: distillation.every_other_layer(True), r"^num_layers: expected an int, got bool True"),
    ("every_other_layer 1", lambda: distillation.every_other_layer(1), r"^num_layers: expected an int >= 2, got 1"),
]

# --------------------------------------------------------------------------------------- embedding
EMBEDDING = [
    ("ScaledEmbedding padding_idx 50", lambda: embedding.ScaledEmbedding(50, 8, padding_idx=50), r"^padding_idx: expected an id in \[0, vocab_size=50\), got 50"),
    ("ScaledEmbedding padding_idx -1", lambda: embedding.ScaledEmbedding(50, 8, padding_idx=-1), r"^padding_idx: expected an id in \[0, vocab_size=50\), got -1"),
]

# ---------------------------------------------------------------------------------------- evidence
EVIDENCE = [
    ("margin_of op typo", lambda: evidence.margin_of(1.0, "=>", 2.0), r"^op: expected one of \('<', '<=', '>', '>='\), got '=>'"),
    ("claim statement not a str", lambda: evidence.claim(3, 0.8, ">", 0.5), r"^statement: expected the claim in words \(a non-empty str\), got 3"),
]

# ------------------------------------------------------------------------------------- feedforward
_ffn = feedforward.FeedForward(8, 16)
FEEDFORWARD = [
    ("FeedForward activation tanh", lambda: feedforward.FeedForward(8, 16, activation="tanh"),
     r"^activation: expected one of .*got 'tanh'"),
]

# --------------------------------------------------------------------------------------- layernorm
LAYERNORM = [
    ("LayerNorm eps negative", lambda: layernorm.LayerNorm(8, eps=-1e-5), r"^eps: expected a number > 0\.0, got -1e-05"),
    ("LayerNorm eps 0", lambda: layernorm.LayerNorm(8, eps=0), r"^eps: expected a number > 0\.0, got 0"),
    ("LayerNorm eps nan", lambda: layernorm.LayerNorm(8, eps=math.nan), r"^eps: expected a finite number, got nan"),
    ("LayerNorm eps str", lambda: layernorm.LayerNorm(8, eps="1e-5"), r"^eps: expected a finite number, got str"),
]

# --------------------------------------------------------------------------------------- long_text
LONG_TEXT = [
    ("sliding_windows ids with [CLS]", lambda: long_text.sliding_windows([101, 5, 6, 102], 8, 2, 101, 102),
     r"^ids: expected the document's tokens without \[CLS\]/\[SEP\] .*got cls_id=101 at index 0"),
    ("sliding_windows ids with [SEP]", lambda: long_text.sliding_windows([5, 6, 102], 8, 2, 101, 102), r"^ids: .*got sep_id=102 at index 2"),
    ("truncate ids with [CLS]", lambda: long_text.truncate([101, 5, 6, 102], 8, "head", 101, 102), r"^ids: .*got cls_id=101 at index 0"),
    ("truncate ids with [SEP]", lambda: long_text.truncate([5, 102], 8, "tail", 101, 102), r"^ids: .*got sep_id=102 at index 1"),
    ("sliding_windows stride >= C", lambda: long_text.sliding_windows([5, 6], 10, 8, 101, 102), r"^stride: expected an int in \[0, max_length - 2 = 8\) .*got 8"),
    ("sliding_windows stride -1", lambda: long_text.sliding_windows([5, 6], 10, -1, 101, 102), r"^stride: expected an int in \[0, max_length - 2 = 8\) .*got -1"),
    ("sliding_windows max_length 2", lambda: long_text.sliding_windows([5, 6], 2, 0, 101, 102), r"^max_length: expected an int >= 3, got 2"),
    ("sliding_windows max_length float", lambda: long_text.sliding_windows([5, 6], 10.0, 0, 101, 102), r"^max_length: expected an int, got float 10\.0"),
    ("sliding_windows cls_id None", lambda: long_text.sliding_windows([5, 6], 10, 2, None, 102), r"^cls_id: expected an int, got NoneType"),
    ("truncate strategy", lambda: long_text.truncate([5, 6], 10, "middle", 101, 102), r"^strategy: expected one of \('head', 'tail', 'head\+tail'\), got 'middle'"),
    ("truncate head_tokens > C", lambda: long_text.truncate([5, 6], 10, "head+tail", 101, 102, head_tokens=9), r"^head_tokens: expected an int in \[0, max_length - 2 = 8\], got 9"),
    ("window_count stride 8 of C = 8", lambda: long_text.window_count(20, 10, 8), r"^stride: expected an int in \[0, max_length - 2 = 8\) .*got 8"),
    ("pool_windows how", lambda: long_text.pool_windows(torch.zeros(2, 3), "sum"), r"^how: expected 'mean' or 'max', got 'sum'"),
]

# ----------------------------------------------------------------------------------------- masking
_mask_kw = dict(mask_token_id=4, vocab_size=10, special_tokens_mask=torch.zeros(1, 3, dtype=torch.bool))
_mt = lambda ids=IDS, **kw: masking.mask_tokens(ids, **{**_mask_kw, **kw})
MASKING = [
    ("mask_tokens id 10", lambda: _mt(torch.tensor([[5, 6, 10]])), r"^input_ids: ids must be in \[0, vocab_size=10\), got values in \[5, 10\]"),
    ("mask_tokens id -1", lambda: _mt(torch.tensor([[5, 6, -1]])), r"^input_ids: ids must be in \[0, vocab_size=10\), got values in \[-1, 6\]"),
    ("mask_tokens float ids", lambda: _mt(IDS.float()), r"^input_ids: expected integer ids .*got dtype torch\.float32"),
    ("mask_tokens list ids", lambda: _mt([[5, 6, 7]]), r"^input_ids: expected a torch\.Tensor, got list"),
    ("mask_tokens ratio 1.5", lambda: _mt(ratio=1.5), r"^ratio: expected a number <= 1\.0, got 1\.5"),
    ("mask_tokens ratio -0.1", lambda: _mt(ratio=-0.1), r"^ratio: expected a number >= 0\.0, got -0\.1"),
    ("mask_tokens ratio nan", lambda: _mt(ratio=math.nan), r"^ratio: expected a finite number, got nan"),
    ("mask_tokens mask_token_id 10", lambda: _mt(mask_token_id=10), r"^mask_token_id: expected an id in \[0, vocab_size=10\), got 10"),
    ("mask_tokens mask_token_id -1", lambda: _mt(mask_token_id=-1), r"^mask_token_id: expected an id in \[0, vocab_size=10\), got -1"),
    ("mask_tokens vocab_size 0", lambda: _mt(vocab_size=0), r"^input_ids: ids must be in \[0, vocab_size=0\), got values in \[5, 7\]"),
    ("mask_tokens special mask shape", lambda: _mt(special_tokens_mask=torch.zeros(1, 2, dtype=torch.bool)),
     r"^special_tokens_mask: expected shape \(1, 3\) like input_ids, got \(1, 2\)"),
    ("mask_tokens split", lambda: _mt(mask_prob_split=(0.8, 0.1, 0.2)), r"^mask_prob_split: expected three non-negative shares summing to 1, got \(0\.8, 0\.1, 0\.2\)"),
    ("random_word_ids mask_token_id -5", lambda: masking.random_word_ids(30, -5), r"^mask_token_id: expected an id in \[0, vocab_size=30\), got -5"),
    ("random_word_ids mask_token_id 30", lambda: masking.random_word_ids(30, 30), r"^mask_token_id: expected an id in \[0, vocab_size=30\), got 30"),
    ("random_word_ids mask_token_id 30, special_ids []", lambda: masking.random_word_ids(30, 30, []), r"^mask_token_id: expected an id in \[0, vocab_size=30\), got 30"),
    ("random_word_ids vocab_size 0", lambda: masking.random_word_ids(0, 4), r"^mask_token_id: expected an id in \[0, vocab_size=0\), got 4"),
    ("mask_tokens split NaN", lambda: _mt(mask_prob_split=(math.nan, 0, 0)), r"^mask_prob_split: expected three non-negative shares summing to 1, got \(nan, 0, 0\)"),
]

# ---------------------------------------------------------------------------------- model_surgery
_lin = nn.Linear(6, 4)
MODEL_SURGERY = [
    ("LowRankLinear rank 2.5", lambda: model_surgery.LowRankLinear(_lin, 2.5), r"^rank: expected 1\.\.4 for a 4x6 weight, got 2\.5"),
    ("LowRankLinear rank True", lambda: model_surgery.LowRankLinear(_lin, True), r"^rank: expected 1\.\.4 for a 4x6 weight, got True"),
]

# ----------------------------------------------------------------------------------------- pooling
_h, _m = torch.randn(2, 4, 8), torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
POOLING = []
for _fn in (pooling.mean_pooling, pooling.max_pooling):
    _n = _fn.__name__
    POOLING += [
        (f"{_n} mask shape", lambda f=_fn: f(_h, torch.ones(2, 3)), r"^attention_mask: expected shape \(2, 4\) \(B, T\) .*got \(2, 3\)"),
        (f"{_n} mask rank 3", lambda f=_fn: f(_h, torch.ones(2, 4, 1)), r"^attention_mask: expected shape \(2, 4\) \(B, T\) like hidden_states' first two dims, got \(2, 4, 1\)"),
        (f"{_n} mask values", lambda f=_fn: f(_h, torch.full((2, 4), 2)), r"^attention_mask: expected only 0 \(padding\) and 1 \(token\) values"),
        (f"{_n} mask list", lambda f=_fn: f(_h, [[1, 1, 0, 0]] * 2), r"^attention_mask: expected a torch\.Tensor, got list"),
    ]
POOLING += [
    ("pool mode", lambda: pooling.pool(_h, _m, "sum"), r"^mode: expected one of \('cls', 'mean', 'max'\), got 'sum'"),
]

# -------------------------------------------------------------------------------------- positional
_sin, _learned = positional.SinusoidalPositionalEncoding(8, 16), positional.LearnedPositionalEmbedding(16, 8)
_x1 = torch.randn(1, 4, 8)
POSITIONAL = []
for _label, _module in (("sinusoidal", _sin), ("learned", _learned)):
    POSITIONAL += [
        (f"{_label} positions batch 2 for x batch 1", lambda m=_module: m(_x1, torch.arange(4).repeat(2, 1)),
         r"^positions: expected batch size 1 like x \(or 1, shared\), got shape \(2, 4\)"),
        (f"{_label} positions batch 3 for x batch 2", lambda m=_module: m(torch.randn(2, 4, 8), torch.arange(4).repeat(3, 1)),
         r"^positions: expected batch size 2 like x .*got shape \(3, 4\)"),
        (f"{_label} positions out of table", lambda m=_module: m(_x1, torch.tensor([0, 1, 2, 16])),
         r"^positions: ids must lie in \[0, 15\] \(max_len=16\), got min 0, max 16"),
        (f"{_label} positions negative", lambda m=_module: m(_x1, torch.tensor([-1, 1, 2, 3])), r"^positions: .*got min -1"),
        (f"{_label} T beyond max_len", lambda m=_module: m(torch.randn(1, 17, 8)), r"^x: sequence length 17 exceeds max_len=16"),
    ]
POSITIONAL += [
    ("LearnedPositionalEmbedding init_std nan", lambda: positional.LearnedPositionalEmbedding(8, 16, init_std=math.nan), r"^init_std: expected a finite number, got nan"),
    ("LearnedPositionalEmbedding init_std -1", lambda: positional.LearnedPositionalEmbedding(8, 16, init_std=-1.0), r"^init_std: expected a number >= 0\.0, got -1\.0"),
]

# ------------------------------------------------------------------------------------- pretraining
_TINY = dict(hidden_size=8, num_attention_heads=2, intermediate_size=8, num_hidden_layers=1)
PRETRAINING = [
    ("PretrainConfig steps -1", lambda: pretraining.PretrainConfig(steps=-1), r"^steps: expected a positive int, got -1"),
    ("PretrainConfig lr NaN", lambda: pretraining.PretrainConfig(lr=math.nan), r"^lr: expected a finite number, got nan"),
    ("PretrainConfig mask_ratio 1.5", lambda: pretraining.PretrainConfig(mask_ratio=1.5), r"^mask_ratio: expected a number <= 1\.0, got 1\.5"),
    ("PretrainConfig batch_size 0", lambda: pretraining.PretrainConfig(batch_size=0), r"^batch_size: expected a positive int, got 0"),
    ("PretrainConfig heads 5", lambda: pretraining.PretrainConfig(num_attention_heads=5), r"^hidden_size=64 must be divisible by num_attention_heads=5"),
    ("PretrainConfig split of 2", lambda: pretraining.PretrainConfig(mask_prob_split=(0.8, 0.2)), r"^mask_prob_split: expected three non-negative shares summing to 1 .*got \(0\.8, 0\.2\)"),
    ("PretrainConfig n_docs 1", lambda: pretraining.PretrainConfig(n_docs=1), r"^n_docs: expected an int >= 2, got 1"),
    ("cache_key seed None", lambda: pretraining.cache_key(pretraining.PretrainConfig(), None), r"^seed: expected an int, got NoneType"),
]

def _pretraining_losses_cases():
    from course_lib.bert import BertForPreTraining
    model = BertForPreTraining(pretraining.PretrainConfig(**_TINY).bert_config(20)).eval()
    return [
        ("evaluate mask_ratio 2", lambda: pretraining.evaluate(model, corpus.corpus_tokenizer(), _DOCS, mask_ratio=2), r"^ratio: expected a number <= 1\.0, got 2"),
    ]


PRETRAINING += _pretraining_losses_cases()


# ----------------------------------------------------------------------------- pretraining_batches
PRETRAINING_BATCHES = [
    ("PairBatcher docs one str", lambda: PairBatcher("some text", corpus.corpus_tokenizer()), r"^documents: expected a list of str, got one str 'some text'"),
]

# --------------------------------------------------------------------------------- pretraining_cli
PRETRAINING_CLI = [
    ("main argv str", lambda: pretraining_cli.main("--help"), r"^argv: expected a list of str .*got one str '--help'"),
]

# ------------------------------------------------------------------------------------ quantization
_w_nan = torch.tensor([[1.0, math.nan], [0.5, 0.2]])
QUANTIZATION = [
    ("per_channel NaN", lambda: quantization.quantize_per_channel_int8(_w_nan), r"^weight: expected finite values, got 1 NaN or inf in shape \(2, 2\)"),
    ("per_tensor NaN", lambda: quantization.quantize_per_tensor_int8(_w_nan), r"^weight: expected finite values, got 1 NaN or inf"),
    ("per_channel inf", lambda: quantization.quantize_per_channel_int8(torch.tensor([[math.inf, 1.0]])), r"^weight: expected finite values, got 1 NaN or inf"),
    ("quantization_error NaN", lambda: quantization.quantization_error(_w_nan, True), r"^weight: expected finite values"),
    ("per_channel int weight", lambda: quantization.quantize_per_channel_int8(torch.ones(2, 2, dtype=torch.long)), r"^weight: expected a floating-point tensor, got torch\.int64"),
    ("per_channel list", lambda: quantization.quantize_per_channel_int8([[1.0]]), r"^weight: expected a torch\.Tensor, got list"),
]

# -------------------------------------------------------------------------------------------- quiz
QUIZ = [
    ("quiz_html mode", lambda: quiz.quiz_html([], mode="exam"), r"^mode: expected 'lesson' or 'interview', got 'exam'"),
    ("quiz_html lang", lambda: quiz.quiz_html([], lang="xx"), r"^lang: expected 'en' or 'zh', got 'xx'"),
    ("notebook_of '3'", lambda: quiz.notebook_of("3"), r"^lesson: expected an int, got str '3'"),
]

# --------------------------------------------------------------------------------------- schedules
SCHEDULES = [
    ("noam d_model -64", lambda: schedules.noam(1, -64, 10), r"^d_model: expected a positive int, got -64"),
    ("noam d_model 0", lambda: schedules.noam(1, 0, 10), r"^d_model: expected a positive int, got 0"),
    ("noam d_model 64.0", lambda: schedules.noam(1, 64.0, 10), r"^d_model: expected a positive int, got float 64\.0"),
    ("noam factor -1", lambda: schedules.noam(1, 64, 10, factor=-1.0), r"^factor: expected a number > 0\.0, got -1\.0"),
    ("noam factor nan", lambda: schedules.noam(1, 64, 10, factor=math.nan), r"^factor: expected a finite number, got nan"),
    ("linear warmup 1.5", lambda: schedules.linear_warmup_decay(0, 1.5, 10), r"^warmup_steps: expected an int, got float 1\.5"),
    ("linear total < warmup", lambda: schedules.linear_warmup_decay(0, 5, 3), r"^total_steps: expected an int >= warmup_steps=5 and >= 1, got 3"),
    ("make_scheduler kind", lambda: schedules.make_scheduler(torch.optim.SGD([torch.zeros(1, requires_grad=True)], 1.0), "cosine"),
     r"^kind: expected one of \('constant', 'linear', 'noam'\), got 'cosine'"),
    ("make_scheduler noam d_model", lambda: schedules.make_scheduler(torch.optim.SGD([torch.zeros(1, requires_grad=True)], 1.0), "noam", d_model=-8, warmup_steps=4),
     r"^d_model: expected a positive int, got -8"),
    ("linear total_steps True", lambda: schedules.linear_warmup_decay(0, 0, True), r"^total_steps: expected an int >= warmup_steps=0 and >= 1, got True"),
]

# ---------------------------------------------------------------------------------- self_attention
_sa = self_attention.SelfAttention(8)
SELF_ATTENTION = [
    ("SelfAttention mask int", lambda: _sa(x3, torch.ones(5, 5, dtype=torch.long)), r"^mask: expected dtype torch\.bool.*int64"),
]

# ---------------------------------------------------------------------------------- sentence_pairs
SENTENCE_PAIRS = [
    ("make_pair document 5", lambda: sentence_pairs.make_pair(_DOCS, (5, 0), "sop", random.Random(0)), r"^location: expected \(document index, index of a sentence with a next one\), got \(5, 0\)"),
    ("make_pair last sentence", lambda: sentence_pairs.make_pair(_DOCS, (0, len(_DOCS[0].sentences) - 1), "sop", random.Random(0)),
     rf"^location: expected .*got \(0, {len(_DOCS[0].sentences) - 1}\)"),
    ("text_documents one str", lambda: sentence_pairs.text_documents("Some text. More text."), r"^texts: expected a list of str, got one str"),
]

# ----------------------------------------------------------------------------- sentence_similarity
SENTENCE_SIMILARITY = [
    ("roc_auc label 2", lambda: sentence_similarity.roc_auc([0.1, 0.9, 0.5], [0, 1, 2]), r"^positive: expected bool or 0/1 flags of both classes, got values \[0, 1, 2\]"),
    ("roc_auc label -1", lambda: sentence_similarity.roc_auc([0.1, 0.9], [-1, 1]), r"^positive: expected bool or 0/1 flags of both classes, got values \[-1, 1\]"),
    ("roc_auc NaN score", lambda: sentence_similarity.roc_auc([0.1, math.nan], [0, 1]), r"^scores: expected a 1-D sequence of finite numbers, got shape \(2,\)"),
    ("roc_auc inf score", lambda: sentence_similarity.roc_auc([math.inf, 0.2], [0, 1]), r"^scores: expected a 1-D sequence of finite numbers"),
    ("roc_auc one class", lambda: sentence_similarity.roc_auc([0.1, 0.2], [1, 1]), r"^positive: expected .*both classes, .*\(2 positives, 0 negatives\)"),
    ("spearman NaN", lambda: sentence_similarity.spearman([1, math.nan, 3], [1, 2, 3]), r"^x: expected a 1-D sequence of finite numbers"),
    ("spearman inf", lambda: sentence_similarity.spearman([1, 2, 3], [1, math.inf, 3]), r"^y: expected a 1-D sequence of finite numbers"),
    ("spearman 2-D", lambda: sentence_similarity.spearman([[1, 2], [3, 4]], [1, 2, 3, 4]), r"^x: expected a 1-D sequence of finite numbers, got shape \(2, 2\)"),
    ("roc_auc 2-D", lambda: sentence_similarity.roc_auc([[0.1, 0.2], [0.3, 0.4]], [0, 1, 0, 1]), r"^scores: expected a 1-D sequence of finite numbers, got shape \(2, 2\)"),
    ("roc_auc empty", lambda: sentence_similarity.roc_auc([], []), r"^positive: expected .*both classes.*\(0 positives, 0 negatives\)"),
]

# --------------------------------------------------------------------------------- span_corruption
SPAN_CORRUPTION = [
    ("span_lengths float", lambda: span_corruption.span_lengths(torch.tensor([0.5, 0.5])), r"^noise_mask: expected a bool tensor \(or 0/1 integers\), got torch\.float32"),
    ("span_lengths int 2", lambda: span_corruption.span_lengths(torch.tensor([0, 2])), r"^noise_mask: expected a bool tensor \(or 0/1 integers\), got torch\.int64"),
    ("span_corrupt sentinel collides", lambda: span_corruption.span_corrupt(torch.arange(6), torch.tensor([0, 1, 0, 0, 1, 0]).bool(), [1, 2, 3]),
     r"^sentinel_ids: expected ids that do not occur in input_ids, got \[1, 2, 3\], which do"),
]

# ------------------------------------------------------------------------------------------ timing
TIMING = [
    ("paired_ratio lengths", lambda: timing.paired_ratio({"a": [1.0, 2.0], "b": [1.0]}, "a", "b"), r"^times\['b'\]: expected 2 rounds like times\['a'\], got 1"),
    ("busy_cores n -1", lambda: timing.busy_cores(-1).__enter__(), r"^n: expected an int >= 0, got -1"),
]

# ------------------------------------------------------------------------------------ tokenization
_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "h", "##i", "hi", "the", "cat"]
_tok = tokenization.WordPieceTokenizer(_VOCAB)
TOKENIZATION = [
    ("tok texts list + pair str", lambda: _tok(["q1", "q2"], "hi"), r"^text_pairs: expected a list of str, got one str 'hi'"),
    ("tok empty batch", lambda: _tok([]), r"^texts: expected a non-empty list of str, got an empty list"),
    ("tok int", lambda: _tok(7), r"^texts: expected a list of str, got int"),
    ("tok None", lambda: _tok(None), r"^texts: expected a list of str, got NoneType"),
    ("tok list with int", lambda: _tok(["hi", 3]), r"^texts\[1\]: expected a str, got int 3"),
    ("tok pairs of another length", lambda: _tok(["hi", "the"], ["cat"]), r"^text_pairs: expected 2 texts like texts, got 1"),
    ("tok str + pair list", lambda: _tok("hi", ["a", "b"]), r"^text_pairs: expected a str, got list"),
    ("tokenize int", lambda: _tok.tokenize(42), r"^text: expected a str, got int 42"),
    ("tokenize bytes", lambda: _tok.tokenize(b"hi"), r"^text: expected a str, got bytes"),
    ("tokenize list", lambda: _tok.tokenize(["hi"]), r"^text: expected a str, got list"),
    ("encode None", lambda: _tok.encode(None), r"^text: expected a str, got NoneType"),
    ("encode pair int", lambda: _tok.encode("hi", 5), r"^text_pair: expected a str, got int 5"),
    ("decode int", lambda: _tok.decode(7), r"^ids: expected a list of token ids, got int 7 \(wrap one id: \[7\]\)"),
    ("decode 0-d tensor", lambda: _tok.decode(torch.tensor(7)), r"^ids: expected a list of token ids, got int 7"),
    ("decode str", lambda: _tok.decode("7"), r"^ids: expected a list of token ids, got str '7'"),
    ("decode id 99", lambda: _tok.decode([7, 99]), r"^ids: expected ids of the vocabulary \(10 tokens\), got 99"),
    ("convert_ids_to_tokens -1", lambda: _tok.convert_ids_to_tokens(-1), r"^ids: expected ids of the vocabulary \(10 tokens\), got -1"),
    ("vocab without [UNK]", lambda: tokenization.WordPieceTokenizer(["[PAD]", "[CLS]", "[SEP]", "[MASK]", "a"]),
     r"^unk_token: expected a token of the vocabulary \(5 tokens\), got '\[UNK\]'"),
    ("vocab without [MASK]", lambda: tokenization.WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]"]),
     r"^mask_token: expected a token of the vocabulary \(4 tokens\), got '\[MASK\]'"),
    ("BPETokenizer without [UNK]", lambda: tokenization.BPETokenizer(["a", "b"], []), r"^unk_token: expected a token of the vocabulary \(2 tokens\), got '\[UNK\]'"),
    ("wordpiece vocab path", lambda: tokenization.wordpiece("hi", "/tmp/vocab.txt"), r"^vocab: expected a dict token -> id or a set of tokens, got a path '/tmp/vocab\.txt'"),
    ("train_bpe one str", lambda: tokenization.train_bpe("one string", 50), r"^texts: expected a list of str, got one str 'one string'"),
    ("train_wordpiece one str", lambda: tokenization.train_wordpiece("one string", 50), r"^texts: expected a list of str, got one str"),
    ("word_counts one str", lambda: tokenization.word_counts("the cat"), r"^texts: expected a list of str, got one str 'the cat'"),
    ("word_counts bytes", lambda: tokenization.word_counts([b"the cat"]), r"^text: expected a str, got bytes"),
    ("normalize None", lambda: tokenization.normalize(None), r"^text: expected a str, got NoneType"),
    ("normalize bytes", lambda: tokenization.normalize(b"Hi"), r"^text: expected a str, got bytes"),
    ("basic_tokenize list", lambda: tokenization.basic_tokenize(["x"]), r"^text: expected a str, got list"),
    ("BPETokenizer.tokenize int", lambda: tokenization.BPETokenizer(["[UNK]", "a"], []).tokenize(5), r"^text: expected a str, got int 5"),
    ("BPETokenizer.encode None", lambda: tokenization.BPETokenizer(["[UNK]", "a"], []).encode(None), r"^text: expected a str, got NoneType"),
    ("BPETokenizer swapped", lambda: tokenization.BPETokenizer([("a", "##b")], ["[UNK]", "a"]), r"^unk_token: expected a token of the vocabulary \(1 tokens\), got '\[UNK\]'"),
    ("load_vocab duplicates", lambda: tokenization.load_vocab(["a", "b", "a"]), r"^vocab: expected distinct tokens, got \['a'\] more than once"),
    ("load_vocab text not path", lambda: tokenization.load_vocab("[PAD]\n[UNK]"), FileNotFoundError, r"^vocab: expected a path to a vocab\.txt file, got '\[PAD\]"),
    ("WordPieceTokenizer one str of tokens", lambda: tokenization.WordPieceTokenizer("[PAD] [UNK] [CLS]"), FileNotFoundError, r"^vocab: expected a path to a vocab\.txt file, got '\[PAD\] \[UNK\] \[CLS\]'"),
    ("__call__ return_tensors np", lambda: _tok(["hi"], return_tensors="np"), r"^return_tensors: expected 'pt' or None, got 'np'"),
    ("decode float id", lambda: _tok.decode([5.7]), TypeError, r"'float' object cannot be interpreted as an integer"),
    ("decode float tensor", lambda: _tok.decode(torch.tensor([2.0, 5.0, 3.0])), TypeError, r"'float' object cannot be interpreted as an integer"),
    ("convert_ids_to_tokens [5.9]", lambda: _tok.convert_ids_to_tokens([5.9]), TypeError, r"'float' object cannot be interpreted as an integer"),
    ("convert_tokens_to_ids a text", lambda: _tok.convert_tokens_to_ids("the cat"), r"^tokens: expected one token \(or a list of tokens\), got a text 'the cat'"),
    ("truncate budget -1", lambda: tokenization.truncate_longest_first([1, 2, 3], None, -1), r"^budget: expected an int >= 0, got -1"),
    ("truncate budget -1 pair", lambda: tokenization.truncate_longest_first([1], [4], -1), r"^budget: expected an int >= 0, got -1"),
    ("truncate budget 2.5", lambda: tokenization.truncate_longest_first([1], None, 2.5), r"^budget: expected an int, got float 2\.5"),
    ("train_bpe special_tokens str", lambda: tokenization.train_bpe(["a b"], 50, special_tokens="[PAD]"), r"^special_tokens: expected a list of str, got one str '\[PAD\]'"),
    ("train_bpe texts []", lambda: tokenization.train_bpe([], 50), r"^texts: expected text with at least one word, got none"),
]

# ---------------------------------------------------------------------------------------- training
_p = torch.nn.Linear(2, 1)
_opt = torch.optim.SGD(_p.parameters(), 0.1)
_train = lambda **kw: training.train(_p, lambda s: torch.randn(4, 2), lambda m, b: m(b).pow(2).mean(), optimizer=_opt,
                                     progress=False, **{"steps": 2, **kw})
TRAINING = [
    ("train clip 0", lambda: _train(clip=0), r"^clip: expected a number > 0\.0, got 0"),
    ("train clip -1", lambda: _train(clip=-1.0), r"^clip: expected a number > 0\.0, got -1\.0"),
    ("train clip nan", lambda: _train(clip=math.nan), r"^clip: expected a finite number, got nan"),
    ("train clip str", lambda: _train(clip="1"), r"^clip: expected a finite number, got str"),
    ("train steps 0", lambda: _train(steps=0), r"^steps: expected a positive int, got 0"),
    ("train steps 2.0", lambda: _train(steps=2.0), r"^steps: expected a positive int, got float 2\.0"),
    ("token_accuracy float ids", lambda: training.token_accuracy(torch.zeros(2, 5), torch.zeros(2, 5, dtype=torch.long)),
     r"^logits_or_ids: predicted ids shaped like targets \(2, 5\) must be integers, got torch\.float32"),
    ("token_accuracy wrong shape", lambda: training.token_accuracy(torch.zeros(3, 5, 7), torch.zeros(2, 5, dtype=torch.long)),
     r"^logits_or_ids: expected logits \(2, 5\) \+ \(V,\) or ids \(2, 5\), got \(3, 5, 7\)"),
]

# ------------------------------------------------------------------------------------- transformer
_enc = transformer.EncoderLayer(8, 2, 16)
_dec = transformer.DecoderLayer(8, 2, 16)
TRANSFORMER = [
    ("EncoderLayer dropout 1.1", lambda: transformer.EncoderLayer(8, 2, 16, dropout=1.1), r"^dropout: expected a number <= 1\.0, got 1\.1"),
    ("EncoderLayer eps -1", lambda: transformer.EncoderLayer(8, 2, 16, layer_norm_eps=-1.0), r"^eps: expected a number > 0\.0, got -1\.0"),
    ("EncoderLayer n_heads 3 of 8", lambda: transformer.EncoderLayer(8, 3, 16), r"^d_model=8 must be divisible by n_heads=3"),
    ("EncoderLayer mask float", lambda: _enc(x3, torch.ones(5, 5)), r"^mask: expected dtype torch\.bool"),
    ("DecoderLayer memory_mask long", lambda: _dec(x3, x3, memory_mask=torch.ones(2, 1, 1, 5, dtype=torch.long)), r"^mask: expected dtype torch\.bool"),
]
_cfg = dict(src_vocab_size=11, tgt_vocab_size=11, d_model=8, n_heads=2, d_ff=16, n_encoder_layers=1, n_decoder_layers=1)
TRANSFORMER += sizes("TransformerConfig", lambda **kw: transformer.TransformerConfig(**kw),
                     [(n, _cfg) for n in ("src_vocab_size", "tgt_vocab_size", "max_len")])
_model = transformer.Transformer(transformer.TransformerConfig(**_cfg))
_src, _tgt = torch.randint(4, 11, (2, 6)), torch.randint(4, 11, (2, 5))
TRANSFORMER += [
    ("TransformerConfig pad_id 11", lambda: transformer.TransformerConfig(**_cfg, pad_id=11), r"^pad_id: expected an id in \[0, tgt_vocab_size=11\), got 11"),
    ("TransformerConfig n_encoder_layers -1", lambda: transformer.TransformerConfig(**{**_cfg, "n_encoder_layers": -1}), r"^n_encoder_layers: expected an int >= 0, got -1"),
    ("Transformer src 1-D", lambda: _model(torch.randint(4, 11, (6,)), _tgt), r"^src: expected a 2-D tensor \(B, T\), got shape \(6,\)"),
    ("Transformer src id 11", lambda: _model(torch.full((2, 6), 11), _tgt), r"^src: ids must be in \[0, vocab_size=11\), got values in \[11, 11\]"),
    ("Transformer src id -1", lambda: _model(torch.full((2, 6), -1), _tgt), r"^src: ids must be in \[0, vocab_size=11\), got values in \[-1, -1\]"),
    ("Transformer tgt_in id 12", lambda: _model(_src, torch.full((2, 5), 12)), r"^tgt_in: ids must be in \[0, vocab_size=11\), got values in \[12, 12\]"),
    ("Transformer tgt_in float", lambda: _model(_src, _tgt.float()), r"^tgt_in: expected integer ids .*got dtype torch\.float32"),
    ("Transformer src list", lambda: _model(_src.tolist(), _tgt), r"^src: expected a torch\.Tensor, got list"),
    ("Transformer src mask shape", lambda: _model(_src, _tgt, src_attention_mask=torch.ones(2, 5, dtype=torch.long)),
     r"^src_attention_mask: expected shape \(2, 6\) \(B, T\) like src, got \(2, 5\)"),
    ("greedy_decode bos_id 11", lambda: _model.greedy_decode(_src, 3, bos_id=11), r"^bos_id: expected an id in \[0, tgt_vocab_size=11\), got 11"),
    ("greedy_decode bos_id -1", lambda: _model.greedy_decode(_src, 3, bos_id=-1), r"^bos_id: expected an id in \[0, tgt_vocab_size=11\), got -1"),
    ("greedy_decode bos_id float", lambda: _model.greedy_decode(_src, 3, bos_id=1.0), r"^bos_id: expected an int, got float 1\.0"),
    ("greedy_decode eos_id 20", lambda: _model.greedy_decode(_src, 3, bos_id=1, eos_id=20), r"^eos_id: expected an id in \[0, tgt_vocab_size=11\), got 20"),
    ("greedy_decode max_len 0", lambda: _model.greedy_decode(_src, 0, bos_id=1), r"^max_len: expected 1\.\.512 .*got 0"),
]
_lm = transformer.CausalLM(transformer.CausalLMConfig(11, d_model=8, n_heads=2, d_ff=16, n_layers=1, max_len=16))
TRANSFORMER += sizes("CausalLMConfig", lambda **kw: transformer.CausalLMConfig(**kw),
                     [("vocab_size", {"vocab_size": 11}), ("max_len", {"vocab_size": 11})])
TRANSFORMER += [
    ("CausalLM id 11", lambda: _lm(torch.full((2, 4), 11)), r"^input_ids: ids must be in \[0, vocab_size=11\), got values in \[11, 11\]"),
    ("CausalLM rank 1", lambda: _lm(torch.ones(4, dtype=torch.long)), r"^input_ids: expected a 2-D tensor \(B, T\), got shape \(4,\)"),
    ("CausalLM float ids", lambda: _lm(torch.ones(2, 4)), r"^input_ids: expected integer ids .*float32"),
    ("CausalLM mask shape", lambda: _lm(torch.ones(2, 4, dtype=torch.long), torch.ones(2, 3, dtype=torch.long)),
     r"^attention_mask: expected shape \(2, 4\) \(B, T\) like input_ids, got \(2, 3\)"),
    ("generate max_new_tokens -1", lambda: _lm.generate(torch.ones(1, 2, dtype=torch.long), -1), r"^max_new_tokens: expected an int >= 0, got -1"),
]
_tcfg = transformer.TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, n_heads=2, d_ff=32,
                                      n_encoder_layers=1, n_decoder_layers=1, max_len=32)
_tr = transformer.Transformer(_tcfg).eval()
_lm20 = transformer.CausalLM(transformer.CausalLMConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16)).eval()
_src20, _tgt20 = torch.randint(4, 20, (2, 6)), torch.randint(4, 20, (3, 5))
TRANSFORMER += [
    ("Transformer batch 2 vs 3", lambda: _tr(_src20, _tgt20), r"^tgt_in: batch size 3 differs from src's 2"),
    ("Transformer src too long", lambda: _tr(torch.zeros(1, 40, dtype=torch.long), _tgt20[:1]), r"^src: sequence length 40 exceeds max_len=32"),
    ("Transformer src T=0", lambda: _tr(torch.zeros(2, 0, dtype=torch.long), _tgt20[:2]), r"^src: expected at least one position, got shape \(2, 0\)"),
    ("Transformer dict config", lambda: transformer.Transformer({"src_vocab_size": 20}), r"^config: expected a TransformerConfig, got dict"),
    ("greedy_decode max_len True", lambda: _tr.greedy_decode(_src20, True, 1), r"^max_len: expected 1\.\.32 .*got True"),
    ("CausalLM too long", lambda: _lm20(torch.zeros(1, 17, dtype=torch.long)), r"^input_ids: sequence length 17 exceeds max_len=16"),
    ("generate T=0", lambda: _lm20.generate(torch.zeros(1, 0, dtype=torch.long), 2), r"^input_ids: expected at least one position, got shape \(1, 0\)"),
    ("generate 1-D", lambda: _lm20.generate(torch.ones(4, dtype=torch.long), 2), r"^input_ids: expected a 2-D tensor \(B, T\), got shape \(4,\)"),
    ("generate 0 tokens, list", lambda: _lm20.generate([[1, 2]], 0), r"^input_ids: expected a torch\.Tensor, got list"),
    ("generate 0 tokens, id 99", lambda: _lm20.generate(torch.tensor([[1, 99]]), 0), r"^input_ids: ids must be in \[0, vocab_size=20\), got values in \[1, 99\]"),
    ("TransformerConfig d_model -8", lambda: transformer.TransformerConfig(10, 10, d_model=-8), r"^d_model: expected a positive int, got -8"),
    ("TransformerConfig n_heads 3 of 64", lambda: transformer.TransformerConfig(10, 10, n_heads=3), r"^d_model=64 must be divisible by n_heads=3"),
    ("TransformerConfig dropout 2", lambda: transformer.TransformerConfig(10, 10, dropout=2), r"^dropout: expected a number <= 1\.0, got 2"),
    ("CausalLMConfig n_heads 5 of 64", lambda: transformer.CausalLMConfig(10, n_heads=5), r"^d_model=64 must be divisible by n_heads=5"),
    ("CausalLMConfig positions rope", lambda: transformer.CausalLMConfig(10, positions="rope"), r"^positions: expected 'learned' or 'sinusoidal', got 'rope'"),
    ("CausalLMConfig activation swish", lambda: transformer.CausalLMConfig(10, activation="swish"), r"^activation: expected one of .*got 'swish'"),
    ("torch_to_course_state_dict module", lambda: transformer.torch_to_course_state_dict(nn.Linear(2, 2)), r"^state_dict: expected a dict name -> tensor .*got Linear"),
]

# ---------------------------------------------------------------------------------- transformer_xl
_xl = transformer_xl.TransformerXL(transformer_xl.TransformerXLConfig(vocab_size=20, d_model=8, n_heads=2, n_layers=1, d_ff=16, mem_len=4))
TRANSFORMER_XL = [
    ("XL id 20", lambda: _xl(torch.full((1, 4), 20)), r"^input_ids: ids must be in \[0, vocab_size=20\), got values in \[20, 20\]"),
    ("XL id -3", lambda: _xl(torch.full((1, 4), -3)), r"^input_ids: ids must be in \[0, vocab_size=20\), got values in \[-3, -3\]"),
    ("XL float ids", lambda: _xl(torch.ones(1, 4)), r"^input_ids: expected integer ids .*got dtype torch\.float32"),
    ("XL rank 1", lambda: _xl(torch.ones(4, dtype=torch.long)), r"^input_ids: expected a 2-D tensor \(B, T\), got shape \(4,\)"),
    ("XL memory of 2 layers for 1", lambda: _xl(torch.ones(1, 4, dtype=torch.long), [torch.zeros(1, 2, 8)] * 2), r"^memory: expected a list of 1 tensors .*got 2"),
    ("XL mem_len -1", lambda: transformer_xl.TransformerXLConfig(vocab_size=20, mem_len=-1), r"^mem_len: expected an int >= 0, got -1"),
    ("XL n_layers -1", lambda: transformer_xl.TransformerXLConfig(vocab_size=20, n_layers=-1), r"^n_layers: expected an int >= 0, got -1"),
] + [(f"XL config {n}={v!r}", lambda n=n, v=v: transformer_xl.TransformerXLConfig(**{"vocab_size": 20, "d_model": 8, "n_heads": 2, n: v}),
      rf"^{n}: expected .*got .*{s}")
     for n in ("vocab_size", "n_heads", "d_ff") for v, s in ((0, "0"), (-2, "-2"), (1.5, "1\\.5"))]
_xl16 = transformer_xl.TransformerXL(transformer_xl.TransformerXLConfig(vocab_size=20, d_model=16, n_heads=2, n_layers=1, d_ff=32, mem_len=4)).eval()
_xl_ids = torch.randint(0, 20, (2, 3))
TRANSFORMER_XL += [
    ("update_memory float32 + float64", lambda: transformer_xl.update_memory(torch.zeros(2, 2, 16), torch.zeros(2, 3, 16, dtype=torch.float64), 4),
     r"^hidden: expected dtype torch\.float32 like memory, got torch\.float64"),
    ("update_memory mem_len True", lambda: transformer_xl.update_memory(torch.zeros(2, 2, 16), torch.zeros(2, 3, 16), True), r"^mem_len: expected an int, got bool True"),
    ("XL T=0", lambda: _xl16(torch.zeros(2, 0, dtype=torch.long)), r"^input_ids: expected at least one position, got shape \(2, 0\)"),
]

# ------------------------------------------------------------------------------------ weight_tying
WEIGHT_TYING = [
    ("tie_weights swapped", lambda: weight_tying.tie_weights(nn.Linear(4, 10), nn.Embedding(10, 4)), r"^lm_head: expected the output layer \(an nn\.Linear\), got an nn\.Embedding - swapped arguments\?"),
]

# ---------------------------------------------------------------------------------------- the runner
BAD_INPUTS = {"albert": ALBERT, "attention": ATTENTION, "bert": BERT, "cache": CACHE, "complexity": COMPLEXITY,
              "data.corpus": DATA_CORPUS, "data.markov": DATA_MARKOV, "data.similarity_pairs": DATA_SIMILARITY_PAIRS,
              "device": DEVICE, "distillation": DISTILLATION, "embedding": EMBEDDING, "evidence": EVIDENCE,
              "feedforward": FEEDFORWARD, "layernorm": LAYERNORM,
              "long_text": LONG_TEXT, "masking": MASKING, "model_surgery": MODEL_SURGERY, "pooling": POOLING, "positional": POSITIONAL,
              "pretraining": PRETRAINING, "pretraining_batches": PRETRAINING_BATCHES,
              "pretraining_cli": PRETRAINING_CLI, "quantization": QUANTIZATION, "quiz": QUIZ, "schedules": SCHEDULES,
              "self_attention": SELF_ATTENTION, "sentence_pairs": SENTENCE_PAIRS,
              "sentence_similarity": SENTENCE_SIMILARITY, "span_corruption": SPAN_CORRUPTION,
              "timing": TIMING, "tokenization": TOKENIZATION, "training": TRAINING, "transformer": TRANSFORMER,
              "transformer_xl": TRANSFORMER_XL, "weight_tying": WEIGHT_TYING}


def _case(module, row):
    """A row as (call, exception type, regex): a ValueError unless the row names another type."""
    name, call, *expected = row
    error, message = expected if len(expected) == 2 else (ValueError, *expected)
    return pytest.param(call, error, message, id=f"{module}: {name}")


CASES = [_case(module, row) for module, rows in BAD_INPUTS.items() for row in rows]


@pytest.mark.parametrize("call,error,message", CASES)
def test_bad_input_raises_naming_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_one_table_per_course_lib_module_in_alphabetical_order():
    assert list(BAD_INPUTS) == sorted(BAD_INPUTS)
    for module in BAD_INPUTS:
        assert importlib.util.find_spec(f"course_lib.{module}") is not None, module


def test_every_case_is_there_once():
    """368 cases when the three bad-input files became this one (one duplicate merged): none lost."""
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 368


def test_cache_dir_refuses_before_creating_anything(tmp_path):
    with pytest.raises(ValueError, match=r"^name:"):
        cache.cache_dir("../escape", root=tmp_path / "root")
    assert not (tmp_path / "escape").exists() and not (tmp_path / "root").exists()


def test_requested_threads_names_the_environment_variable(monkeypatch):
    monkeypatch.setenv("COURSE_TORCH_THREADS", "0")
    with pytest.raises(ValueError, match=r"^COURSE_TORCH_THREADS: expected a positive int, got 0"):
        device.requested_threads(1)
    monkeypatch.setenv("COURSE_TORCH_THREADS", "two")
    with pytest.raises(ValueError, match=r"^COURSE_TORCH_THREADS: expected a positive int, got 'two'"):
        device.requested_threads(1)


# ------------------------------------------------------------ valid edge inputs still work
def test_batch_one_and_one_token():
    x = torch.randn(1, 1, 8)
    assert mha(x, x, x)[0].shape == (1, 1, 8)
    assert _enc(x, transformer.causal_mask(1)).shape == (1, 1, 8)
    assert _sin(x).shape == _learned(x).shape == (1, 1, 8)
    assert _lm(torch.ones(1, 1, dtype=torch.long)).shape == (1, 1, 11)


def test_shared_positions_broadcast_over_the_batch():
    x = torch.randn(3, 4, 8)
    for module in (_sin, _learned):
        torch.testing.assert_close(module(x, torch.arange(4)[None]), module(x))
        torch.testing.assert_close(module(x, torch.arange(4).repeat(3, 1)), module(x))


def test_minus_100_labels_and_0_1_or_bool_masks():
    labels = torch.full_like(_ids, -100)
    labels[:, 2] = _ids[:, 2]
    assert torch.isfinite(_pre(_ids, labels=labels, next_sentence_label=torch.tensor([0, -100])).loss)
    for mask in (torch.ones(2, 6, dtype=torch.long), torch.ones(2, 6, dtype=torch.bool), torch.tensor([[1] * 6, [1] * 3 + [0] * 3])):
        assert _bert(_ids, attention_mask=mask).last_hidden_state.shape == (2, 6, 8)
        assert pooling.mean_pooling(torch.randn(2, 6, 3), mask).shape == (2, 3)


def test_float64_layers_take_float64_input():
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    assert MultiHeadAttention(8, 2).double()(x, x, x)[0].dtype == torch.float64
    assert feedforward.FeedForward(8, 16).double()(x).dtype == torch.float64
    assert transformer.EncoderLayer(8, 2, 16).double()(x).dtype == torch.float64
    assert layernorm.LayerNorm(8)(x).dtype == torch.float64          # no matmul: any float goes
    with torch.autocast("cpu", dtype=torch.bfloat16):                  # autocast casts the operands itself
        assert _ffn(torch.randn(2, 5, 8)).shape == (2, 5, 8)


def test_mean_pooling_ignores_nan_at_padding_and_matches_the_product_on_finite_input():
    h = torch.randn(2, 4, 3)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    expected = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
    torch.testing.assert_close(pooling.mean_pooling(h, mask), expected, atol=0, rtol=0)
    h[0, 3] = math.nan
    assert torch.isfinite(pooling.mean_pooling(h, mask)).all()
    torch.testing.assert_close(pooling.mean_pooling(h, mask), expected, atol=0, rtol=0)


def test_clip_none_and_ids_with_numpy_sizes():
    import numpy as np
    assert len(_train(clip=None)) == 2
    assert embedding.ScaledEmbedding(np.int64(5), 4)(torch.tensor([4])).shape == (1, 4)
    assert sentence_similarity.roc_auc([0.1, 0.9], np.array([False, True])) == 1.0

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
    assert timing.median((3.0, np.float32(1.0), 2)) == 2
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

def test_int32_and_int16_permutations_give_the_ranks_of_the_long_one():
    order = torch.tensor([2, 0, 1])
    for dtype in (torch.int32, torch.int16, torch.uint8):
        assert torch.equal(permutation_masks.ranks(order.to(dtype)), permutation_masks.ranks(order))
    content, query = permutation_masks.two_stream_masks(order.int())
    assert torch.equal(content, permutation_masks.two_stream_masks(order)[0])


def test_numpy_integers_are_sizes_like_python_ints():
    assert distillation.every_other_layer(np.int64(6)) == [0, 2, 4]
    assert schedules.noam(np.int64(5), 512, np.int64(4000)) == schedules.noam(5, 512, 4000)
    assert schedules.linear_warmup_decay(3, 2, np.int64(10)) == schedules.linear_warmup_decay(3, 2, 10)
    torch.testing.assert_close(transformer_xl.relative_sinusoid(np.int64(4), np.int64(16)),
                               transformer_xl.relative_sinusoid(4, 16), atol=0, rtol=0)
    assert torch.equal(transformer_xl.memory_mask(np.int64(3), np.int64(2)), transformer_xl.memory_mask(3, 2))
    assert transformer_xl.update_memory(torch.zeros(1, 2, 4), torch.zeros(1, 3, 4), np.int64(4)).shape == (1, 4, 4)
    assert _tr.greedy_decode(_src20, np.int64(3), 1).shape == (2, 3)
    assert device.seed_everything(np.int64(7)).initial_seed() == 7
    from course_lib import lm_masks
    assert torch.equal(lm_masks.direction_mask(np.int64(4), "forward"), lm_masks.direction_mask(4, "forward"))


def test_valid_calls_give_the_same_numbers_as_before():
    # the checks add no arithmetic: these are the formulas, computed by hand
    torch.manual_seed(0)
    a, b = torch.randn(2, 4, 8), torch.randn(2, 4, 8)
    out, w = scaled_dot_product_attention(a, b, b, scale=0.5)
    torch.testing.assert_close(w, torch.softmax(a @ b.transpose(-2, -1) * 0.5, -1), atol=0, rtol=0)
    k = torch.randn(4, 8)                                   # broadcast k and v over q's batch: still fine
    assert scaled_dot_product_attention(a, k, k)[0].shape == (2, 4, 8)
    labels = torch.tensor([0, -100, 2, 1])
    loss = distillation.distillation_loss(s, t, labels, temperature=2.0, alpha=0.5)
    expected = 0.5 * distillation.soft_target_loss(s, t, 2.0) + 0.5 * torch.nn.functional.cross_entropy(s, labels)
    torch.testing.assert_close(loss, expected, atol=0, rtol=0)
    unlabelled = distillation.distillation_loss(s, t, torch.full((4,), -100), temperature=2.0, alpha=0.5)
    torch.testing.assert_close(unlabelled, 0.5 * distillation.soft_target_loss(s, t, 2.0), atol=0, rtol=0)
    assert complexity.fit_power_law([4, 16, 64], n=[1, 2, 4])["n"] == pytest.approx(2)
    assert evidence.margin_of(3.0, ">", 2.0) == (1.0, 0.5)


def test_one_token_segments_carry_memory():
    logits, memory = _xl16(_xl_ids[:, :1])                                    # the empty memory of empty_memory
    assert logits.shape == (2, 1, 20) and memory[0].shape == (2, 1, 16)
    assert _xl16(_xl_ids[:, :1], memory)[0].shape == (2, 1, 20)


def test_models_accept_one_position_and_their_own_heads():
    assert _bert16(torch.tensor([[5]])).pooler_output.shape == (1, 16)
    assert _lm20.generate(torch.tensor([[1]]), 0).tolist() == [[1]]
    assert _lm20.generate(torch.tensor([[1]] * 2), 2).shape == (2, 3)
    assert _tr(_src20, _tgt20[:2]).shape == (2, 5, 20)
    assert distillation.BertClassifier(_bert16, np.int64(3))(torch.tensor([[5, 6]])).logits.shape == (1, 3)
    assert albert.count_parameters(albert.meta_model(albert.AlbertModel, albert.AlbertConfig(**_acfg))) == \
        albert.albert_parameter_count(albert.AlbertConfig(**_acfg))
    lm_head = nn.Linear(4, 10, bias=False)
    embedding_table = nn.Embedding(10, 4)
    weight_tying.tie_weights(embedding_table, lm_head)
    assert lm_head.weight is embedding_table.weight
