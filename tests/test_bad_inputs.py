"""Bad inputs to the public API raise a ValueError that starts with the argument's name and says
what was expected and what came (tables per module); valid edge inputs still work (the end).

Checks sit where a user enters (CONTRIBUTING.md, "Style"): the models' forwards, the configs, the
public functions a lesson calls. Inner layers (attention inside an encoder layer, the FFN, a
LayerNorm) check nothing that PyTorch's own error already says; their rows are gone.

Each row: (case id, a call that must fail, the message as a regex). The regexes check the name
first and both sides of the comparison, so a message that names the wrong argument, or whose
"expected" and "got" read the same, fails here.
"""
import math

import pytest
import torch

from course_lib import (bert, embedding, feedforward, layernorm, long_text, masking, pooling,
                        positional, quantization, schedules, self_attention, sentence_similarity,
                        tokenization, training, transformer, transformer_xl)
from course_lib.attention import MultiHeadAttention, scaled_dot_product_attention, split_heads

pytestmark = pytest.mark.unit

x3 = torch.randn(2, 5, 8)
mha = MultiHeadAttention(8, 2)
BAD_SIZES = [(0, r"0"), (-4, r"-4"), (2.5, r"float 2\.5"), ("8", r"str '8'"), (True, r"bool True")]
IDS = torch.tensor([[5, 6, 7]])


def sizes(label, make, names_and_kwargs):
    """Rows for a constructor: each size argument set to 0, negative, a float, a str, a bool."""
    rows = []
    for name, kwargs in names_and_kwargs:
        for value, shown in BAD_SIZES:
            rows.append((f"{label} {name}={value!r}", lambda kw=kwargs, n=name, v=value: make(**{**kw, n: v}),
                         rf"^{name}: expected a positive int, got .*{shown}"))
    return rows


# ----------------------------------------------------------------------------------- attention
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
]
_sa = self_attention.SelfAttention(8)
ATTENTION += [("SelfAttention mask int", lambda: _sa(x3, torch.ones(5, 5, dtype=torch.long)), r"^mask: expected dtype torch\.bool.*int64")]

# --------------------------------------------------------------------- feed-forward, layernorm
_ffn = feedforward.FeedForward(8, 16)
FEEDFORWARD = [("FeedForward activation tanh", lambda: feedforward.FeedForward(8, 16, activation="tanh"),
                r"^activation: expected one of .*got 'tanh'")]

_ln = layernorm.LayerNorm(8)
LAYERNORM = [
    ("LayerNorm eps negative", lambda: layernorm.LayerNorm(8, eps=-1e-5), r"^eps: expected a number > 0\.0, got -1e-05"),
    ("LayerNorm eps 0", lambda: layernorm.LayerNorm(8, eps=0), r"^eps: expected a number > 0\.0, got 0"),
    ("LayerNorm eps nan", lambda: layernorm.LayerNorm(8, eps=math.nan), r"^eps: expected a finite number, got nan"),
    ("LayerNorm eps str", lambda: layernorm.LayerNorm(8, eps="1e-5"), r"^eps: expected a finite number, got str"),
]

# ------------------------------------------------------------------ positions and embeddings
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

_emb = embedding.ScaledEmbedding(50, 8)
POSITIONAL += [
    ("ScaledEmbedding padding_idx 50", lambda: embedding.ScaledEmbedding(50, 8, padding_idx=50), r"^padding_idx: expected an id in \[0, vocab_size=50\), got 50"),
    ("ScaledEmbedding padding_idx -1", lambda: embedding.ScaledEmbedding(50, 8, padding_idx=-1), r"^padding_idx: expected an id in \[0, vocab_size=50\), got -1"),
]

# ------------------------------------------------------------------------------- transformer
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
    ("CausalLM positions kind", lambda: transformer.CausalLM(transformer.CausalLMConfig(11, positions="rope")), r"^positions: expected 'learned' or 'sinusoidal', got 'rope'"),
    ("generate max_new_tokens -1", lambda: _lm.generate(torch.ones(1, 2, dtype=torch.long), -1), r"^max_new_tokens: expected an int >= 0, got -1"),
]

# ---------------------------------------------------------------------------------------- BERT
_bcfg = dict(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
             max_position_embeddings=16)
BERT = sizes("BertConfig", lambda **kw: bert.BertConfig(**kw),
             [(n, _bcfg) for n in ("vocab_size", "hidden_size", "num_attention_heads", "intermediate_size",
                                   "max_position_embeddings", "type_vocab_size")])
_bert = bert.BertModel(bert.BertConfig(**_bcfg))
_pre = bert.BertForPreTraining(bert.BertConfig(**_bcfg))
_ids = torch.randint(5, 50, (2, 6))
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

# ------------------------------------------------------------------------------- Transformer-XL
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

# ---------------------------------------------------------------------- schedules and training
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
]

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

# ------------------------------------------------------------------------------------- pooling
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
POOLING += [("pool mode", lambda: pooling.pool(_h, _m, "sum"), r"^mode: expected one of \('cls', 'mean', 'max'\), got 'sum'")]

# -------------------------------------------------------------------------------- tokenization
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
]

# ------------------------------------------------------------------------------------- masking
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
]

# ----------------------------------------------------------------------------------- long text
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

# ----------------------------------------------------------------- similarity, fast inference
SIMILARITY = [
    ("roc_auc label 2", lambda: sentence_similarity.roc_auc([0.1, 0.9, 0.5], [0, 1, 2]), r"^positive: expected bool or 0/1 flags of both classes, got values \[0, 1, 2\]"),
    ("roc_auc label -1", lambda: sentence_similarity.roc_auc([0.1, 0.9], [-1, 1]), r"^positive: expected bool or 0/1 flags of both classes, got values \[-1, 1\]"),
    ("roc_auc NaN score", lambda: sentence_similarity.roc_auc([0.1, math.nan], [0, 1]), r"^scores: expected a 1-D sequence of finite numbers, got shape \(2,\)"),
    ("roc_auc inf score", lambda: sentence_similarity.roc_auc([math.inf, 0.2], [0, 1]), r"^scores: expected a 1-D sequence of finite numbers"),
    ("roc_auc one class", lambda: sentence_similarity.roc_auc([0.1, 0.2], [1, 1]), r"^positive: expected .*both classes, .*\(2 positives, 0 negatives\)"),
]
_w_nan = torch.tensor([[1.0, math.nan], [0.5, 0.2]])
QUANTIZATION = [
    ("per_channel NaN", lambda: quantization.quantize_per_channel_int8(_w_nan), r"^weight: expected finite values, got 1 NaN or inf in shape \(2, 2\)"),
    ("per_tensor NaN", lambda: quantization.quantize_per_tensor_int8(_w_nan), r"^weight: expected finite values, got 1 NaN or inf"),
    ("per_channel inf", lambda: quantization.quantize_per_channel_int8(torch.tensor([[math.inf, 1.0]])), r"^weight: expected finite values, got 1 NaN or inf"),
    ("quantization_error NaN", lambda: quantization.quantization_error(_w_nan, True), r"^weight: expected finite values"),
    ("per_channel int weight", lambda: quantization.quantize_per_channel_int8(torch.ones(2, 2, dtype=torch.long)), r"^weight: expected a floating-point tensor, got torch\.int64"),
    ("per_channel list", lambda: quantization.quantize_per_channel_int8([[1.0]]), r"^weight: expected a torch\.Tensor, got list"),
]

TABLES = {"attention": ATTENTION, "feedforward": FEEDFORWARD, "layernorm": LAYERNORM, "positional": POSITIONAL,
          "transformer": TRANSFORMER, "bert": BERT, "transformer_xl": TRANSFORMER_XL, "schedules": SCHEDULES,
          "training": TRAINING, "pooling": POOLING, "tokenization": TOKENIZATION, "masking": MASKING,
          "long_text": LONG_TEXT, "sentence_similarity": SIMILARITY, "quantization": QUANTIZATION}
CASES = [pytest.param(call, message, id=f"{module}: {name}")
         for module, rows in TABLES.items() for name, call, message in rows]


@pytest.mark.parametrize("call,message", CASES)
def test_bad_input_raises_value_error_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_table_is_large_enough():
    assert len(CASES) >= 150


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
