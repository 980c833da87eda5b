"""The fuzz report's findings in the model-side modules (attention, transformer, Transformer-XL,
BERT, ALBERT, distillation, pooling, positions, weight tying, training, schedules, complexity,
long text, permutation masks, device, cache, evidence, quiz): each bad input raises a ValueError
that starts with the argument's name and says what was expected and what came; honest inputs
(numpy ints, int32 permutations, a float64 model's empty memory, ...) keep working (the end).

Each row: (case id, a call that must fail, the message as a regex), as in test_bad_inputs.py.
Only the checks at a user's entry stay (see test_bad_inputs.py); an inner layer's argument, or one
that PyTorch's or Python's own error already names, has no row.
"""
import math

import numpy as np
import pytest
import torch
from torch import nn

from course_lib import (albert, bert, cache, complexity, device, distillation, evidence, permutation_masks,
                        positional, quiz, schedules, transformer, transformer_xl, weight_tying)
from course_lib.attention import scaled_dot_product_attention

pytestmark = pytest.mark.unit

q = torch.randn(2, 4, 8)
s, t = torch.randn(4, 3), torch.randn(4, 3)

# ----------------------------------------------------------------------------------- attention
ATTENTION = [
    ("sdpa scale nan", lambda: scaled_dot_product_attention(q, q, q, scale=math.nan), r"^scale: expected a finite number, got nan"),
    ("sdpa scale -1", lambda: scaled_dot_product_attention(q, q, q, scale=-1.0), r"^scale: expected a number > 0\.0, got -1\.0"),
    ("sdpa scale 'auto'", lambda: scaled_dot_product_attention(q, q, q, scale="auto"), r"^scale: expected a finite number, got str 'auto'"),
]

# ------------------------------------------------------------------------------- distillation
_bcfg = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
             max_position_embeddings=16)
_cfg = bert.BertConfig(**_bcfg)
_bert = bert.BertModel(_cfg).eval()
_labels = torch.tensor([0, 1, 2, 0])
DISTILLATION = [
    ("soft_target_loss T inf", lambda: distillation.soft_target_loss(s, t, temperature=math.inf), r"^temperature: expected a finite number, got inf"),
    ("distillation_loss T inf", lambda: distillation.distillation_loss(s, t, _labels, temperature=math.inf), r"^temperature: expected a finite number, got inf"),
    ("BertClassifier num_labels 0", lambda: distillation.BertClassifier(_bert, 0), r"^num_labels: expected a positive int, got 0"),
    ("BertClassifier num_labels -1", lambda: distillation.BertClassifier(_bert, -1), r"^num_labels: expected a positive int, got -1"),
    ("BertClassifier num_labels 2.0", lambda: distillation.BertClassifier(_bert, 2.0), r"^num_labels: expected a positive int, got float 2\.0"),
    ("every_other_layer True", lambda: distillation.every_other_layer(True), r"^num_layers: expected an int, got bool True"),
    ("every_other_layer 1", lambda: distillation.every_other_layer(1), r"^num_layers: expected an int >= 2, got 1"),
]

# ---------------------------------------------------------------------------------------- BERT
_x16 = torch.randn(2, 5, 16)
_head = bert.BertLMHead(_cfg, _bert.embeddings.word_embeddings)
BERT = [
    ("BertModel T=0", lambda: _bert(torch.zeros(2, 0, dtype=torch.long)), r"^input_ids: expected at least one position, got shape \(2, 0\)"),
    ("BertModel dict config", lambda: bert.BertModel(dict(_bcfg)), r"^config: expected a BertConfig, got dict"),
    ("BertConfig.from_dict list", lambda: bert.BertConfig.from_dict([("vocab_size", 10)]), r"^d: expected a dict .*got list"),
    ("hf_to_course_state_dict key beyond num_layers", lambda: bert.hf_to_course_state_dict(
        {"encoder.layer.1.attention.self.query.weight": torch.ones(1)}, 1), r"^state_dict: unexpected .*'encoder\.layer\.1\..*\(num_layers=1\)"),
]

# -------------------------------------------------------------------------------------- ALBERT
_acfg = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
             max_position_embeddings=16, embedding_size=8)
ALBERT = [
    ("AlbertConfig embedding_size 2.5", lambda: albert.AlbertConfig(**{**_acfg, "embedding_size": 2.5}),
     r"^embedding_size: expected a positive int, got float 2\.5"),
    ("AlbertConfig embedding_size '8'", lambda: albert.AlbertConfig(**{**_acfg, "embedding_size": "8"}),
     r"^embedding_size: expected a positive int, got str '8'"),
    ("AlbertConfig num_hidden_groups True", lambda: albert.AlbertConfig(**_acfg, num_hidden_groups=True),
     r"^num_hidden_groups: expected a positive int, got bool True"),
    ("meta_model instance", lambda: albert.meta_model(_bert, _cfg), r"^cls: expected a model class .*got BertModel"),
    ("AlbertModel BertConfig", lambda: albert.AlbertModel(_cfg), r"^config: expected an AlbertConfig .*got BertConfig"),
    ("from_hf_state_dict unknown part", lambda: albert.from_hf_state_dict(
        albert.AlbertConfig(**_acfg), {"encoder.albert_layer_groups.0.albert_layers.0.foo.weight": torch.ones(1)}),
     r"^state_dict: unexpected Hugging Face ALBERT key '.*foo\.weight'"),
    ("from_hf_state_dict short key", lambda: albert.from_hf_state_dict(
        albert.AlbertConfig(**_acfg), {"encoder.albert_layer_groups.0": torch.ones(1)}), r"^state_dict: unexpected Hugging Face ALBERT key 'encoder\.albert_layer_groups\.0'"),
]

# ------------------------------------------------------------------------------- transformer
_tcfg = transformer.TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, n_heads=2, d_ff=32,
                                      n_encoder_layers=1, n_decoder_layers=1, max_len=32)
_tr = transformer.Transformer(_tcfg).eval()
_lm = transformer.CausalLM(transformer.CausalLMConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16)).eval()
_src, _tgt = torch.randint(4, 20, (2, 6)), torch.randint(4, 20, (3, 5))
TRANSFORMER = [
    ("Transformer batch 2 vs 3", lambda: _tr(_src, _tgt), r"^tgt_in: batch size 3 differs from src's 2"),
    ("Transformer src too long", lambda: _tr(torch.zeros(1, 40, dtype=torch.long), _tgt[:1]), r"^src: sequence length 40 exceeds max_len=32"),
    ("Transformer src T=0", lambda: _tr(torch.zeros(2, 0, dtype=torch.long), _tgt[:2]), r"^src: expected at least one position, got shape \(2, 0\)"),
    ("Transformer dict config", lambda: transformer.Transformer({"src_vocab_size": 20}), r"^config: expected a TransformerConfig, got dict"),
    ("greedy_decode max_len True", lambda: _tr.greedy_decode(_src, True, 1), r"^max_len: expected 1\.\.32 .*got True"),
    ("CausalLM too long", lambda: _lm(torch.zeros(1, 17, dtype=torch.long)), r"^input_ids: sequence length 17 exceeds max_len=16"),
    ("generate T=0", lambda: _lm.generate(torch.zeros(1, 0, dtype=torch.long), 2), r"^input_ids: expected at least one position, got shape \(1, 0\)"),
    ("generate 1-D", lambda: _lm.generate(torch.ones(4, dtype=torch.long), 2), r"^input_ids: expected a 2-D tensor \(B, T\), got shape \(4,\)"),
    ("generate 0 tokens, list", lambda: _lm.generate([[1, 2]], 0), r"^input_ids: expected a torch\.Tensor, got list"),
    ("generate 0 tokens, id 99", lambda: _lm.generate(torch.tensor([[1, 99]]), 0), r"^input_ids: ids must be in \[0, vocab_size=20\), got values in \[1, 99\]"),
]

# ---------------------------------------------------------------------------- Transformer-XL
_xl = transformer_xl.TransformerXL(transformer_xl.TransformerXLConfig(vocab_size=20, d_model=16, n_heads=2, n_layers=1, d_ff=32, mem_len=4)).eval()
_rel = transformer_xl.RelativeMultiHeadAttention(16, 2)
_h = torch.randn(2, 3, 16)
_ids = torch.randint(0, 20, (2, 3))
TRANSFORMER_XL = [
    ("update_memory float32 + float64", lambda: transformer_xl.update_memory(torch.zeros(2, 2, 16), torch.zeros(2, 3, 16, dtype=torch.float64), 4),
     r"^hidden: expected dtype torch\.float32 like memory, got torch\.float64"),
    ("update_memory mem_len True", lambda: transformer_xl.update_memory(torch.zeros(2, 2, 16), torch.zeros(2, 3, 16), True), r"^mem_len: expected an int, got bool True"),
    ("XL T=0", lambda: _xl(torch.zeros(2, 0, dtype=torch.long)), r"^input_ids: expected at least one position, got shape \(2, 0\)"),
]

# ------------------------------------------------------------ pooling, positions, weight tying
_w = nn.Embedding(10, 4)
MODULES = [
    ("LearnedPositionalEmbedding init_std nan", lambda: positional.LearnedPositionalEmbedding(8, 16, init_std=math.nan), r"^init_std: expected a finite number, got nan"),
    ("LearnedPositionalEmbedding init_std -1", lambda: positional.LearnedPositionalEmbedding(8, 16, init_std=-1.0), r"^init_std: expected a number >= 0\.0, got -1\.0"),
    ("tie_weights swapped", lambda: weight_tying.tie_weights(nn.Linear(4, 10), nn.Embedding(10, 4)), r"^lm_head: expected the output layer \(an nn\.Linear\), got an nn\.Embedding - swapped arguments\?"),
]

# ---------------------------------------------------------------------------- training, schedules
_model = nn.Linear(2, 2)
_opt = torch.optim.SGD(_model.parameters(), lr=0.1)
_batch = lambda step: torch.randn(3, 2)
TRAINING = [
    ("linear total_steps True", lambda: schedules.linear_warmup_decay(0, 0, True), r"^total_steps: expected an int >= warmup_steps=0 and >= 1, got True"),
]

# -------------------------------------------------------------------------------- complexity
COMPLEXITY = [
    ("fit_power_law value 0", lambda: complexity.fit_power_law([0, 4, 16], n=[1, 2, 4]), r"^values: expected 3 or more positive finite numbers .*got \[0\.0, 4\.0, 16\.0\]"),
    ("fit_power_law value nan", lambda: complexity.fit_power_law([1, math.nan, 16], n=[1, 2, 4]), r"^values: expected 3 or more positive finite numbers .*got \[1\.0, nan, 16\.0\]"),
    ("fit_power_law n 0", lambda: complexity.fit_power_law([1, 4, 16], n=[0, 2, 4]), r"^n: expected 3 or more positive finite numbers .*got \[0\.0, 2\.0, 4\.0\]"),
    ("fit_power_law values scalar", lambda: complexity.fit_power_law(4.0, n=2.0), r"^values: expected 2 or more positive finite numbers .*got 4\.0"),
]

# --------------------------------------------------------------- device, cache, evidence, quiz
MISC = [
    ("seed_everything -1", lambda: device.seed_everything(-1), r"^seed: expected an int in \[0, 2\*\*32 - 1\], got int -1"),
    ("seed_everything 2**40", lambda: device.seed_everything(2 ** 40), r"^seed: expected an int in \[0, 2\*\*32 - 1\], got int 1099511627776"),
    ("seed_everything 1.5", lambda: device.seed_everything(1.5), r"^seed: expected an int in \[0, 2\*\*32 - 1\], got float 1\.5"),
    ("limit_threads 1.7", lambda: device.limit_threads(1.7), r"^threads: expected a positive int, got float 1\.7"),
    ("limit_threads '1'", lambda: device.limit_threads("1"), r"^threads: expected a positive int, got str '1'"),
    ("limit_threads 0", lambda: device.limit_threads(0), r"^threads: expected a positive int, got int 0"),
    ("requested_threads 0", lambda: device.requested_threads(0), r"^default: expected a positive int, got int 0"),
    ("source_modules missing", lambda: cache.source_modules("/nonexistent.py"), r"^entry_points: expected existing source files, got '/nonexistent\.py'"),
    ("cache_key tensor", lambda: cache.cache_key({"w": torch.zeros(2000)}), r"^inputs: expected JSON-like values, got a Tensor of shape \(2000,\)"),
    ("cache_key length 0", lambda: cache.cache_key({"a": 1}, length=0), r"^length: expected an int >= 1, got 0"),
    ("cache_dir escapes", lambda: cache.cache_dir("../escape", root="/tmp/never-created-root"), r"^name: expected a non-empty relative folder name .*got '\.\./escape'"),
    ("cache_dir ''", lambda: cache.cache_dir("", root="/tmp/never-created-root"), r"^name: expected a non-empty relative folder name .*got ''"),
    ("cache_dir absolute", lambda: cache.cache_dir("/etc", root="/tmp/never-created-root"), r"^name: .*got '/etc'"),
    ("margin_of op typo", lambda: evidence.margin_of(1.0, "=>", 2.0), r"^op: expected one of \('<', '<=', '>', '>='\), got '=>'"),
    ("quiz_html mode", lambda: quiz.quiz_html([], mode="exam"), r"^mode: expected 'lesson' or 'interview', got 'exam'"),
    ("quiz_html lang", lambda: quiz.quiz_html([], lang="xx"), r"^lang: expected 'en' or 'zh', got 'xx'"),
    ("notebook_of '3'", lambda: quiz.notebook_of("3"), r"^lesson: expected an int, got str '3'"),
]

# ------------------------------------------------- the second fuzz pass (after the fixes above)
_hf = {k: v for k, v in _bert.to_hf_state_dict().items()}
SECOND_PASS = [
    ("TransformerConfig d_model -8", lambda: transformer.TransformerConfig(10, 10, d_model=-8), r"^d_model: expected a positive int, got -8"),
    ("TransformerConfig n_heads 3 of 64", lambda: transformer.TransformerConfig(10, 10, n_heads=3), r"^d_model=64 must be divisible by n_heads=3"),
    ("TransformerConfig dropout 2", lambda: transformer.TransformerConfig(10, 10, dropout=2), r"^dropout: expected a number <= 1\.0, got 2"),
    ("CausalLMConfig n_heads 5 of 64", lambda: transformer.CausalLMConfig(10, n_heads=5), r"^d_model=64 must be divisible by n_heads=5"),
    ("CausalLMConfig positions rope", lambda: transformer.CausalLMConfig(10, positions="rope"), r"^positions: expected 'learned' or 'sinusoidal', got 'rope'"),
    ("CausalLMConfig activation swish", lambda: transformer.CausalLMConfig(10, activation="swish"), r"^activation: expected one of .*got 'swish'"),
    ("torch_to_course_state_dict module", lambda: transformer.torch_to_course_state_dict(nn.Linear(2, 2)), r"^state_dict: expected a dict name -> tensor .*got Linear"),
    ("BertModel.from_hf_state_dict empty", lambda: bert.BertModel.from_hf_state_dict(_cfg, {}), r"^state_dict: \d+ tensor\(s\) missing for this BertModel config, e\.g\. \['embeddings"),
    ("BertModel.from_hf_state_dict course keys", lambda: bert.BertModel.from_hf_state_dict(_cfg, _bert.state_dict()), r"^state_dict: 32 tensor\(s\) missing .*or a course \(not Hugging Face\) state dict\?"),
    ("BertModel.from_hf_state_dict other size", lambda: bert.BertModel.from_hf_state_dict(bert.BertConfig(**{**_bcfg, "vocab_size": 60}), _hf),
     r"^state_dict: 1 tensor\(s\) of another shape \(checkpoint vs model\) .*embeddings\.word_embeddings\.weight \(50, 16\) vs \(60, 16\)"),
    ("albert.from_hf_state_dict empty", lambda: albert.from_hf_state_dict(albert.AlbertConfig(**_bcfg, embedding_size=8), {}), r"^state_dict: \d+ tensor\(s\) missing for this AlbertModel"),
    ("claim statement not a str", lambda: evidence.claim(3, 0.8, ">", 0.5), r"^statement: expected the claim in words \(a non-empty str\), got 3"),
]

TABLES = {"second pass": SECOND_PASS, "attention": ATTENTION, "distillation": DISTILLATION, "bert": BERT, "albert": ALBERT,
          "transformer": TRANSFORMER, "transformer_xl": TRANSFORMER_XL, "modules": MODULES,
          "training": TRAINING, "complexity": COMPLEXITY, "misc": MISC}
CASES = [pytest.param(call, message, id=f"{module}: {name}")
         for module, rows in TABLES.items() for name, call, message in rows]


@pytest.mark.parametrize("call,message", CASES)
def test_bad_input_raises_value_error_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


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


# ------------------------------------------------------------ honest inputs still work
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
    assert _tr.greedy_decode(_src, np.int64(3), 1).shape == (2, 3)
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
    logits, memory = _xl(_ids[:, :1])                                    # the empty memory of empty_memory
    assert logits.shape == (2, 1, 20) and memory[0].shape == (2, 1, 16)
    assert _xl(_ids[:, :1], memory)[0].shape == (2, 1, 20)


def test_models_accept_one_position_and_their_own_heads():
    assert _bert(torch.tensor([[5]])).pooler_output.shape == (1, 16)
    assert _lm.generate(torch.tensor([[1]]), 0).tolist() == [[1]]
    assert _lm.generate(torch.tensor([[1]] * 2), 2).shape == (2, 3)
    assert _tr(_src, _tgt[:2]).shape == (2, 5, 20)
    assert distillation.BertClassifier(_bert, np.int64(3))(torch.tensor([[5, 6]])).logits.shape == (1, 3)
    assert albert.count_parameters(albert.meta_model(albert.AlbertModel, albert.AlbertConfig(**_acfg))) == \
        albert.albert_parameter_count(albert.AlbertConfig(**_acfg))
    lm_head = nn.Linear(4, 10, bias=False)
    weight_tying.tie_weights(_w, lm_head)
    assert lm_head.weight is _w.weight
