"""course_lib.bert and course_lib.pretrained against Hugging Face transformers."""
from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from course_lib.bert import (BertConfig, BertEmbeddings, BertForPreTraining,  # noqa: E402
                             BertModel, mlm_cross_entropy)
from course_lib.masking import IGNORE_INDEX  # noqa: E402
from course_lib.pretrained import load_minilm, minilm_path  # noqa: E402
from course_lib.transformer import EncoderLayer  # noqa: E402

TEXTS = ["The cat sat on the mat.",
         "BERT reads the whole sentence at once, left and right context together, "
         "which is what 'bidirectional' means in its name.",
         "short",
         "",
         "Un café très noir, s'il vous plaît — 谢谢!"]
PAIRS = ["It was a sunny day.", "", "another one", "B only", "x y z"]


@pytest.fixture(scope="module")
def minilm():
    return load_minilm()


@pytest.fixture(scope="module")
def hf_minilm():
    from transformers import BertModel as HFBertModel

    return HFBertModel.from_pretrained(str(minilm_path()), attn_implementation="eager").eval()


def _compare(ours, hf, batch):
    with torch.no_grad():
        out = ours(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                   output_hidden_states=True, output_attentions=True)
        ref = hf(**batch, output_hidden_states=True, output_attentions=True)
    return out, ref


def test_minilm_equals_hugging_face_on_every_layer(minilm, hf_minilm):
    model, tok = minilm
    assert not model.training
    batch = tok(TEXTS, PAIRS)
    real = batch["attention_mask"].bool()
    assert (~real).any() and real.sum(1).unique().numel() == len(TEXTS)  # padded, mixed lengths
    out, ref = _compare(model, hf_minilm, batch)
    assert len(out.hidden_states) == 7 and len(out.attentions) == 6
    for layer, (a, b) in enumerate(zip(out.hidden_states, ref.hidden_states)):
        diff = (a - b)[real].abs().max().item()  # non-padded positions
        assert diff <= 1e-5, f"hidden state {layer}: max |diff| {diff:.2e}"
    for layer, (a, b) in enumerate(zip(out.attentions, ref.attentions)):
        # rows of real queries; weights on padded keys are 0 in both
        diff = (a - b).permute(0, 2, 1, 3)[real].abs().max().item()
        assert diff <= 1e-5, f"attention {layer}: max |diff| {diff:.2e}"
    assert torch.equal(out.last_hidden_state, out.hidden_states[-1])
    assert (out.pooler_output - ref.pooler_output).abs().max().item() <= 1e-5
    assert (out.last_hidden_state - ref.last_hidden_state)[real].abs().max().item() <= 1e-5


def test_padded_positions_match_in_float64(minilm, hf_minilm):
    """On the explicit path (output_attentions) padded positions are computed as Hugging Face
    does (their queries attend to the real tokens in both models). In float32 they drift by
    ~5e-5 (rounding amplified at those positions), so they are compared in float64, where
    everything agrees to ~1e-13. The fast path skips them: zeros (see the next test)."""
    import copy

    model, tok = minilm
    ours64, hf64 = copy.deepcopy(model).double(), copy.deepcopy(hf_minilm).double()
    batch = tok(TEXTS[:3])
    out, ref = _compare(ours64, hf64, batch)
    for a, b in zip(out.hidden_states, ref.hidden_states):
        assert (a - b).abs().max().item() < 1e-10


def test_token_type_ids_matter_and_match(minilm, hf_minilm):
    model, tok = minilm
    batch = tok(["first segment"], ["second segment"])
    assert batch["token_type_ids"].tolist() == [[0, 0, 0, 0, 1, 1, 1]]
    seq = model(batch["input_ids"], batch["token_type_ids"]).last_hidden_state
    seq0 = model(batch["input_ids"]).last_hidden_state  # all segment A
    ref = hf_minilm(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"])
    assert (seq - ref.last_hidden_state).abs().max() <= 1e-5
    assert (seq - seq0).abs().max() > 1e-3


def test_from_hf_state_dict_round_trip(minilm, hf_minilm):
    model, _ = minilm
    hf_state = {k: v for k, v in hf_minilm.state_dict().items() if not k.endswith("_ids")}
    ours_as_hf = model.to_hf_state_dict()
    assert set(ours_as_hf) == set(hf_state)
    for key, value in hf_state.items():
        assert torch.equal(ours_as_hf[key], value), key
    # and back: a fresh model from our exported dict equals the original exactly
    again = BertModel.from_hf_state_dict(model.config, ours_as_hf)
    for (k1, v1), (k2, v2) in zip(model.state_dict().items(), again.state_dict().items()):
        assert k1 == k2 and torch.equal(v1, v2)
    # the "bert." prefix of pretraining checkpoints is accepted, a missing tensor is not
    BertModel.from_hf_state_dict(model.config, {"bert." + k: v for k, v in hf_state.items()})
    broken = dict(hf_state)
    del broken["encoder.layer.3.output.dense.weight"]
    with pytest.raises(ValueError, match=r"^state_dict: 1 tensor\(s\) missing .*layers.3.linear2.weight"):
        BertModel.from_hf_state_dict(model.config, broken)


def test_bert_layer_is_the_course_encoder_layer(minilm):
    model, _ = minilm
    assert all(isinstance(layer, EncoderLayer) for layer in model.layers)
    assert not model.layers[0].norm_first


def test_config_from_json():
    config = BertConfig.from_json(minilm_path() / "config.json")
    assert (config.vocab_size, config.hidden_size, config.num_hidden_layers,
            config.num_attention_heads, config.intermediate_size) == (30522, 384, 6, 12, 1536)
    assert config.layer_norm_eps == 1e-12 and config.hidden_act == "gelu"
    with pytest.raises(ValueError, match="position_embedding_type"):
        BertConfig.from_dict({"position_embedding_type": "relative_key"})
    with pytest.raises(ValueError, match="hidden_size=10 must be divisible by num_attention_heads=4"):
        BertConfig(hidden_size=10, num_attention_heads=4)


# ----------------------------------------------------------------------------- bad inputs

TINY = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                  intermediate_size=32, max_position_embeddings=8, type_vocab_size=2)


def test_bad_inputs_raise_naming_the_argument_and_limit():
    model = BertModel(TINY)
    ids = torch.ones(2, 8, dtype=torch.long)
    with pytest.raises(ValueError, match=r"input_ids: sequence length 9 exceeds max_position_embeddings=8"):
        model(torch.ones(2, 9, dtype=torch.long))
    with pytest.raises(ValueError, match=r"token_type_ids: ids must be in \[0, type_vocab_size=2\)"):
        model(ids, token_type_ids=torch.full_like(ids, 2))  # a third segment
    with pytest.raises(ValueError, match=r"input_ids: ids must be in \[0, vocab_size=50\)"):
        model(torch.full_like(ids, 50))
    with pytest.raises(ValueError, match=r"input_ids: ids must be in \[0, vocab_size=50\)"):
        model(torch.full_like(ids, -1))
    with pytest.raises(ValueError, match=r"attention_mask: expected shape \(2, 8\)"):
        model(ids, attention_mask=torch.ones(2, 7, dtype=torch.long))
    with pytest.raises(ValueError, match=r"attention_mask: expected shape \(2, 8\)"):
        model(ids, attention_mask=torch.ones(2, 1, 1, 8, dtype=torch.long))
    with pytest.raises(ValueError, match="token_type_ids: expected shape"):
        model(ids, token_type_ids=torch.zeros(2, 7, dtype=torch.long))
    with pytest.raises(ValueError, match="input_ids: expected a 2-D tensor"):
        model(torch.ones(8, dtype=torch.long))
    # at the limit everything works
    out = model(ids, token_type_ids=torch.ones_like(ids))
    assert out.last_hidden_state.shape == (2, 8, 16) and out.pooler_output.shape == (2, 16)


def test_real_minilm_refuses_position_512(minilm):
    model, _ = minilm
    with pytest.raises(ValueError, match="max_position_embeddings=512"):
        model(torch.full((1, 513), 1000))


def test_embeddings_are_a_sum_then_layernorm():
    emb = BertEmbeddings(TINY).eval()
    ids = torch.randint(0, 50, (3, 8))
    types = torch.randint(0, 2, (3, 8))
    s = (emb.word_embeddings.weight[ids] + emb.position_embeddings.weight[:8]
         + emb.token_type_embeddings.weight[types])
    expected = F.layer_norm(s, (16,), emb.LayerNorm.weight, emb.LayerNorm.bias, eps=1e-12)
    assert torch.allclose(emb(ids, types), expected, atol=1e-6)


# ----------------------------------------------------------------------------- pretraining

def _pretraining_batch(config, B=4, T=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, config.vocab_size, (B, T), generator=g)
    labels = torch.full_like(ids, IGNORE_INDEX)
    chosen = torch.rand(B, T, generator=g) < 0.3
    chosen[:, 1] = True
    labels[chosen] = ids[chosen]
    nsp = torch.randint(0, 2, (B,), generator=g)
    return ids, labels, nsp


def test_decoder_is_tied_to_word_embeddings():
    model = BertForPreTraining(TINY)
    emb = model.bert.embeddings.word_embeddings.weight
    assert model.mlm_head.decoder.weight is emb
    # one parameter, counted once; an update moves both
    assert sum(p is emb for p in model.parameters()) == 1
    ids, labels, nsp = _pretraining_batch(TINY)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(ids, labels=labels, next_sentence_label=nsp).loss.backward()
    opt.step()
    assert model.mlm_head.decoder.weight is model.bert.embeddings.word_embeddings.weight


def test_loss_is_masked_cross_entropy_plus_nsp():
    torch.manual_seed(0)
    model = BertForPreTraining(TINY).eval()
    ids, labels, nsp = _pretraining_batch(TINY)
    out = model(ids, labels=labels, next_sentence_label=nsp)
    sel = labels != IGNORE_INDEX
    mlm = F.cross_entropy(out.prediction_logits[sel], labels[sel])   # only selected positions
    nsp_loss = F.cross_entropy(out.seq_relationship_logits, nsp)
    assert torch.allclose(out.mlm_loss, mlm, atol=1e-6)
    assert torch.allclose(out.nsp_loss, nsp_loss, atol=1e-6)
    assert torch.allclose(out.loss, mlm + nsp_loss, atol=1e-6)
    # the prediction logits are the tied decoder applied to the transformed hidden states
    seq = model.bert(ids).last_hidden_state
    h = model.mlm_head.LayerNorm(F.gelu(model.mlm_head.dense(seq)))
    logits = h @ model.bert.embeddings.word_embeddings.weight.T + model.mlm_head.bias
    assert torch.allclose(out.prediction_logits, logits, atol=1e-5)


def test_loss_ignores_unmasked_positions():
    torch.manual_seed(0)
    model = BertForPreTraining(TINY).eval()
    ids, labels, nsp = _pretraining_batch(TINY)
    unsel = labels == IGNORE_INDEX
    out = model(ids, labels=labels, next_sentence_label=nsp)
    # the predictions at unselected positions receive exactly zero gradient ...
    out.prediction_logits.retain_grad()
    out.loss.backward()
    grad = out.prediction_logits.grad
    assert (grad[unsel] == 0).all() and (grad[~unsel] != 0).any()
    # ... so rewriting them (any logits at all) leaves the MLM loss unchanged
    logits = out.prediction_logits.detach().clone()
    base = mlm_cross_entropy(logits, labels)
    scrambled = logits.clone()
    scrambled[unsel] = torch.randn_like(scrambled[unsel]) * 10
    assert torch.equal(mlm_cross_entropy(scrambled, labels), base)
    scrambled[~unsel] += torch.randn_like(scrambled[~unsel])
    assert not torch.equal(mlm_cross_entropy(scrambled, labels), base)
    # the -100 is what excludes them: give those positions real labels and the loss moves
    other = labels.clone()
    other[unsel] = ids[unsel]
    assert not torch.allclose(model(ids, labels=other).mlm_loss, out.mlm_loss)


def test_no_selected_position_gives_zero_mlm_loss_not_nan():
    model = BertForPreTraining(TINY)
    ids, _, nsp = _pretraining_batch(TINY)
    out = model(ids, labels=torch.full_like(ids, IGNORE_INDEX), next_sentence_label=nsp)
    assert out.mlm_loss.item() == 0.0 and torch.isfinite(out.loss)
    out.loss.backward()


def test_pretraining_heads_equal_hugging_face():
    """Copy a random Hugging Face BertForPreTraining into ours: same logits and same loss."""
    from transformers import BertConfig as HFConfig
    from transformers import BertForPreTraining as HFPreTraining

    torch.manual_seed(0)
    hf_config = HFConfig(**{k: v for k, v in TINY.to_dict().items()}, attn_implementation="eager")
    hf = HFPreTraining(hf_config).eval()
    ours = BertForPreTraining.from_hf_state_dict(TINY, hf.state_dict()).eval()
    assert ours.mlm_head.decoder.weight is ours.bert.embeddings.word_embeddings.weight
    ids, labels, nsp = _pretraining_batch(TINY)
    mask = torch.ones_like(ids)
    mask[0, 6:] = 0
    ref = hf(input_ids=ids, attention_mask=mask, labels=labels, next_sentence_label=nsp)
    out = ours(ids, attention_mask=mask, labels=labels, next_sentence_label=nsp)
    real = mask.bool()
    assert (out.prediction_logits - ref.prediction_logits)[real].abs().max() < 1e-5
    assert (out.seq_relationship_logits - ref.seq_relationship_logits).abs().max() < 1e-5
    assert abs(out.loss.item() - ref.loss.item()) < 1e-5


# ---------------------------------------------------------------------- the fast path

def test_fast_path_equals_explicit_path_and_hugging_face_sdpa(minilm):
    """Without output_attentions the model runs PyTorch's fused attention; with it, the
    course's explicit attention. Both equal Hugging Face's SDPA BertModel on real tokens."""
    from transformers import BertModel as HFBertModel

    hf_sdpa = HFBertModel.from_pretrained(str(minilm_path()), attn_implementation="sdpa").eval()
    model, tok = minilm
    batch = tok(TEXTS, PAIRS)
    real = batch["attention_mask"].bool()
    with torch.no_grad():
        out = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
        slow = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
                     output_attentions=True)
        ref = hf_sdpa(**batch)
    fast = out.last_hidden_state
    assert out.hidden_states is None and out.attentions is None and len(slow.attentions) == 6
    assert (fast - slow.last_hidden_state)[real].abs().max().item() <= 1e-5
    assert (fast - ref.last_hidden_state)[real].abs().max().item() <= 1e-5
    assert (out.pooler_output - ref.pooler_output).abs().max().item() <= 1e-5
    # the fast path skips padded positions (zeros there), the explicit one computes them
    assert torch.equal(fast[~real], torch.zeros_like(fast[~real]))
    # hidden states without attentions come from the fast path too
    hs = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"],
               output_hidden_states=True)
    assert hs.attentions is None and torch.equal(hs.hidden_states[-1], fast)
    assert type(hs) is type(out) is type(slow)                       # one type, whatever the flags


def test_fast_path_never_builds_weights_and_drops_an_all_ones_mask(minilm, monkeypatch):
    import course_lib.attention as attention

    model, tok = minilm
    calls, masks = [], []
    explicit, fused = attention.scaled_dot_product_attention, F.scaled_dot_product_attention
    monkeypatch.setattr(attention, "scaled_dot_product_attention",
                        lambda *a, **k: calls.append(1) or explicit(*a, **k))
    monkeypatch.setattr(attention.F, "scaled_dot_product_attention",
                        lambda *a, attn_mask=None, **k: masks.append(attn_mask) or
                        fused(*a, attn_mask=attn_mask, **k))
    batch = tok(["one sentence without padding"])
    with torch.no_grad():
        a = model(batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        assert calls == [] and len(masks) == 6 and all(m is None for m in masks)
        b = model(batch["input_ids"], attention_mask=batch["attention_mask"],
                  output_attentions=True).last_hidden_state
        assert len(calls) == 6
        padded = tok(["one sentence", "one sentence without padding"])
        masks.clear()
        model(padded["input_ids"], attention_mask=padded["attention_mask"])
        assert len(masks) == 6 and masks[0].shape == (2, 1, 1, padded["input_ids"].shape[1])
    assert (a - b).abs().max().item() <= 1e-5


def test_training_mode_drops_attention_probabilities_on_the_fast_path(monkeypatch):
    import course_lib.attention as attention

    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16,
                        attention_probs_dropout_prob=0.25)
    model = BertModel(config)
    seen = []
    fused = F.scaled_dot_product_attention
    monkeypatch.setattr(attention.F, "scaled_dot_product_attention",
                        lambda *a, dropout_p=0.0, **k: seen.append(dropout_p) or
                        fused(*a, dropout_p=dropout_p, **k))
    ids = torch.randint(0, 50, (2, 8))
    model.train()(ids)
    model.eval()(ids)
    assert seen == [0.25, 0.25, 0.0, 0.0]


def test_fused_norms_and_gelu_equal_the_course_formulas(minilm):
    """BERT's layers use nn.LayerNorm / nn.GELU for speed; swapping in the written-out
    course modules (lessons 07, 10) gives the same hidden states."""
    import copy

    from course_lib.activations import GELU
    from course_lib.layernorm import LayerNorm

    model, tok = minilm
    assert isinstance(model.layers[0].norm1, torch.nn.LayerNorm)
    assert isinstance(model.layers[0].activation, torch.nn.GELU)
    written = copy.deepcopy(model)
    for layer in written.layers:
        for name in ("norm1", "norm2"):
            fused = getattr(layer, name)
            norm = LayerNorm(fused.normalized_shape, eps=fused.eps)
            norm.load_state_dict(fused.state_dict())
            setattr(layer, name, norm)
        layer.activation = GELU("none")
    batch = tok(TEXTS[:2])
    real = batch["attention_mask"].bool()
    with torch.no_grad():
        diff = (model(**batch).last_hidden_state
                - written(**batch).last_hidden_state)[real].abs().max().item()
    assert diff <= 1e-5


def test_a_traced_model_keeps_the_padding_mask(minilm):
    """Traced (as the ONNX exporter does) on an unpadded batch, the graph must still apply
    the mask: the no-padding shortcut is skipped while tracing."""
    model, tok = minilm
    unpadded = tok(["trace me", "and me"])
    assert unpadded["attention_mask"].all()
    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            return self.model(input_ids, attention_mask=attention_mask).last_hidden_state

    with torch.no_grad():
        traced = torch.jit.trace(Encoder(), (unpadded["input_ids"], unpadded["attention_mask"]),
                                 check_trace=False)
        padded = tok(["short", "a much longer sentence than the first one"])
        real = padded["attention_mask"].bool()
        diff = (traced(padded["input_ids"], padded["attention_mask"])
                - model(padded["input_ids"], attention_mask=padded["attention_mask"]).last_hidden_state)
    assert diff[real].abs().max().item() <= 1e-5


def test_the_padded_path_skips_padding_and_trains_as_the_full_one():
    """With padding the layers run on the real tokens only (TokenPacking): the real tokens'
    vectors, the pooled output and every gradient equal the (B, T) path's (the explicit one,
    output_attentions=True), and the padded positions come out as zeros."""
    from course_lib.transformer import TokenPacking

    torch.manual_seed(0)
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertModel(config).train()
    ids = torch.randint(5, 50, (3, 7))
    mask = torch.ones_like(ids)
    mask[1, 4:] = 0
    mask[2, 2:] = 0
    real = mask.bool()
    packing = TokenPacking(mask)
    x = torch.randn(3, 7, 4)
    assert packing.pack(x).shape == (int(real.sum()), 4)
    assert torch.equal(packing.unpack(packing.pack(x))[real], x[real])
    assert torch.equal(packing.unpack(packing.pack(x))[~real], torch.zeros(int((~real).sum()), 4))
    grads = []
    for flags in ({}, {"output_attentions": True}):
        model.zero_grad()
        out = model(ids, attention_mask=mask, **flags)
        (out.last_hidden_state[real].pow(2).mean() + out.pooler_output.sum()).backward()
        grads.append((out, [p.grad.clone() for p in model.parameters()]))
    (fast, fast_grads), (full, full_grads) = grads
    torch.testing.assert_close(fast.last_hidden_state[real], full.last_hidden_state[real], atol=1e-5, rtol=0)
    torch.testing.assert_close(fast.pooler_output, full.pooler_output, atol=1e-6, rtol=0)
    assert fast.last_hidden_state[~real].abs().max() == 0
    for a, b in zip(fast_grads, full_grads):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_the_entry_checks_read_no_values_off_the_cpu():
    """The ids' range (and an attention_mask's 0/1 values) are read on the CPU only: on an
    accelerator reading them back would stall every forward. A tensor on the meta device has no
    values at all, so a forward that reads one fails; BERT's runs (no mask: nothing to skip)."""
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16)
    with torch.device("meta"):
        model = BertModel(config).eval()
    ids = torch.zeros(2, 5, dtype=torch.long, device="meta")
    assert model(ids, torch.zeros_like(ids)).last_hidden_state.shape == (2, 5, 16)
    with pytest.raises(ValueError, match=r"^input_ids: ids must be in \[0, vocab_size=50\)"):
        BertModel(config)(torch.full((2, 5), 50))                       # on the CPU: checked
