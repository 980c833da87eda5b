"""EncoderLayer / DecoderLayer against PyTorch's layers, masks, causality, the full model."""
import pytest
import torch
from torch import nn

from course_lib.attention import MultiHeadAttention
import torch.nn.functional as F

from course_lib.schedules import make_scheduler
from course_lib.data.tasks import BOS, EOS, make_batch
from course_lib.training import sequence_accuracy, train
from course_lib.transformer import (CausalLM, CausalLMConfig, DecoderLayer, EncoderLayer,
                                    Transformer, TransformerConfig, TransformerDecoder,
                                    TransformerEncoder, causal_mask, padding_mask,
                                    torch_to_course_state_dict)

D, H, FF = 32, 4, 64


def _attention_mask(B, T, g):
    """(B, T) 0/1 with a random number of trailing pads, at least one real token per row."""
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    lengths[0] = T
    return (torch.arange(T)[None, :] < lengths[:, None]).long()


def _copy(course_layer, torch_layer):
    course_layer.load_state_dict(torch_to_course_state_dict(torch_layer.state_dict()))


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("masking", ["none", "padding", "causal+padding"])
def test_encoder_layer_matches_torch(norm_first, activation, masking):
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation=activation,
                                     batch_first=True, norm_first=norm_first).eval()
    ours = EncoderLayer(D, H, FF, activation=activation, norm_first=norm_first).eval()
    _copy(ours, ref)
    B, T = 3, 7
    x = torch.randn(B, T, D, generator=g)
    am = _attention_mask(B, T, g)
    mask, ref_kw = None, {}
    if masking != "none":
        mask = padding_mask(am)                                       # (B, 1, 1, T)
        ref_kw["src_key_padding_mask"] = am == 0                      # torch: True = ignore
    if masking == "causal+padding":
        mask = mask & causal_mask(T)                                  # (B, 1, T, T)
        ref_kw["src_mask"] = ~causal_mask(T)
    expected = ref(x, **ref_kw)                                       # grad on: PyTorch's slow path
    got, weights = ours.forward_with_attention(x, mask=mask)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)
    assert weights.shape == (B, H, T, T)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T), atol=1e-6, rtol=0)
    if mask is not None:
        assert (weights.masked_select(~mask.expand(B, H, T, T)) == 0).all()
    # forward runs PyTorch's fused attention (no weights): same output
    torch.testing.assert_close(ours(x, mask=mask), got, atol=1e-6, rtol=0)


def test_encoder_layer_bert_settings_and_eps():
    torch.manual_seed(1)
    ref = nn.TransformerEncoderLayer(D, H, FF, activation="gelu", batch_first=True,
                                     layer_norm_eps=1e-12).eval()
    ours = EncoderLayer(D, H, FF, activation="gelu", layer_norm_eps=1e-12).eval()
    _copy(ours, ref)
    assert ours.norm1.eps == 1e-12 and ours.norm2.eps == 1e-12
    x = torch.randn(2, 5, D)
    torch.testing.assert_close(ours(x), ref(x), atol=1e-5, rtol=0)


def test_state_dict_names_are_pytorchs():
    ref = nn.TransformerDecoderLayer(D, H, FF, batch_first=True)
    ours = DecoderLayer(D, H, FF)
    theirs = set(torch_to_course_state_dict(ref.state_dict()))
    assert set(ours.state_dict()) == theirs
    assert isinstance(ours.self_attn, MultiHeadAttention)
    assert isinstance(ours.multihead_attn, MultiHeadAttention)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_decoder_layer_matches_torch(norm_first, activation):
    g = torch.Generator().manual_seed(2)
    torch.manual_seed(2)
    ref = nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, activation=activation,
                                     batch_first=True, norm_first=norm_first).eval()
    ours = DecoderLayer(D, H, FF, activation=activation, norm_first=norm_first).eval()
    _copy(ours, ref)
    B, T, S = 3, 6, 8
    x, memory = torch.randn(B, T, D, generator=g), torch.randn(B, S, D, generator=g)
    tgt_am, src_am = _attention_mask(B, T, g), _attention_mask(B, S, g)
    expected = ref(x, memory, tgt_mask=~causal_mask(T), tgt_key_padding_mask=tgt_am == 0,
                   memory_key_padding_mask=src_am == 0)
    got = ours(x, memory, self_mask=causal_mask(T) & padding_mask(tgt_am),
               memory_mask=padding_mask(src_am))
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)
    # without masks too
    torch.testing.assert_close(ours(x, memory), ref(x, memory), atol=1e-5, rtol=0)


def test_masks():
    m = causal_mask(4)
    assert m.dtype == torch.bool and m.shape == (4, 4)
    assert m.tolist() == [[i >= j for j in range(4)] for i in range(4)]
    pm = padding_mask(torch.tensor([[1, 1, 0], [1, 0, 0]]))
    assert pm.shape == (2, 1, 1, 3) and pm.dtype == torch.bool
    assert pm[:, 0, 0].tolist() == [[True, True, False], [True, False, False]]
    assert padding_mask(torch.tensor([[True, False]])).tolist() == [[[[True, False]]]]


@pytest.mark.parametrize("call", [
    lambda l: l(torch.randn(2, 5, D), mask=torch.ones(2, 5, 5)),                       # float mask
    lambda l: l(torch.randn(2, 5, D), mask=torch.ones(2, 1, 1, 4, dtype=torch.bool)),
])
def test_a_layer_names_a_bad_mask(call):
    """Layers check nothing themselves; their attention checks the mask (a float one would be
    added to the scores by the fused kernel)."""
    with pytest.raises(ValueError, match="^mask:"):
        call(EncoderLayer(D, H, FF))


@pytest.mark.parametrize("kwargs", [
    dict(memory=torch.randn(2, 4, D), self_mask=torch.ones(6, 6, dtype=torch.bool)),
    dict(memory=torch.randn(2, 4, D), memory_mask=causal_mask(5)),
    dict(memory=torch.randn(2, 4, D), memory_mask=torch.ones(2, 1, 1, 4, dtype=torch.long)),
])
def test_a_decoder_layer_names_a_bad_mask(kwargs):
    with pytest.raises(ValueError, match="^mask:"):
        DecoderLayer(D, H, FF)(torch.randn(2, 5, D), **kwargs)


def test_bad_constructor_and_mask_args():
    with pytest.raises(ValueError, match="^activation:"):
        EncoderLayer(D, H, FF, activation="swish")
    with pytest.raises(ValueError, match="d_model"):
        EncoderLayer(30, 4, FF)
    lm = CausalLM(CausalLMConfig(vocab_size=11, d_model=D, n_heads=H, d_ff=FF, n_layers=1))
    ids = torch.ones(1, 3, dtype=torch.long)
    with pytest.raises(ValueError, match="^attention_mask: expected only 0"):     # at the model's entry
        lm(ids, torch.tensor([[1, 2, 0]]))
    with pytest.raises(ValueError, match=r"^attention_mask: expected shape \(1, 3\)"):
        lm(ids, torch.ones(1, 1, 3))


@pytest.mark.parametrize("norm_first", [False, True])
def test_stacks_match_torch(norm_first):
    torch.manual_seed(3)
    kw = dict(dropout=0.0, batch_first=True, norm_first=norm_first)
    final = nn.LayerNorm(D) if norm_first else None
    ref_enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H, FF, **kw), 3, norm=final,
                                    enable_nested_tensor=False).eval()
    ref_dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, H, FF, **kw), 2,
                                    norm=nn.LayerNorm(D) if norm_first else None).eval()
    with torch.no_grad():   # distinct layers (PyTorch deep-copies one initialisation)
        for p in list(ref_enc.parameters()) + list(ref_dec.parameters()):
            p.add_(0.1 * torch.randn_like(p))
    enc, dec = TransformerEncoder(3, D, H, FF, norm_first=norm_first), TransformerDecoder(
        2, D, H, FF, norm_first=norm_first)
    enc.load_state_dict(torch_to_course_state_dict(ref_enc.state_dict()))
    dec.load_state_dict(torch_to_course_state_dict(ref_dec.state_dict()))
    x, y = torch.randn(2, 6, D), torch.randn(2, 4, D)
    memory = enc(x)
    torch.testing.assert_close(memory, ref_enc(x), atol=1e-5, rtol=0)
    torch.testing.assert_close(dec(y, memory, self_mask=causal_mask(4)),
                               ref_dec(y, memory, tgt_mask=~causal_mask(4)), atol=1e-5, rtol=0)
    _, weights = enc.forward_with_attention(x)
    assert len(weights) == 3 and weights[0].shape == (2, H, 6, 6)


def _tiny(norm_first=False, tie=True, V=11):
    torch.manual_seed(0)
    return Transformer(TransformerConfig(V, V, d_model=D, n_heads=H, d_ff=FF,
                                         norm_first=norm_first, tie_weights=tie)).eval()


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_is_causal(norm_first):
    model = _tiny(norm_first)
    src = torch.randint(4, 11, (3, 6))
    tgt = torch.randint(4, 11, (3, 7))
    k = 4
    changed = tgt.clone()
    changed[:, k] = (tgt[:, k] - 4 + 1) % 7 + 4              # a different token at position k
    a, b = model(src, tgt), model(src, changed)
    assert torch.equal(a[:, :k], b[:, :k])                    # earlier outputs: bit-identical
    assert (a[:, k:] - b[:, k:]).abs().amax(dim=-1).min() > 1e-4   # later ones do change
    lm = CausalLM(CausalLMConfig(11, d_model=D, n_heads=H, d_ff=FF)).eval()
    a, b = lm(tgt), lm(changed)
    assert torch.equal(a[:, :k], b[:, :k]) and not torch.allclose(a[:, k:], b[:, k:])


def test_source_padding_is_ignored():
    model = _tiny()
    src = torch.randint(4, 11, (2, 6))
    am = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    other = src.clone()
    other[0, 4:] = 5                                           # change only padded tokens
    tgt = torch.randint(4, 11, (2, 5))
    torch.testing.assert_close(model(src, tgt, src_attention_mask=am),
                               model(other, tgt, src_attention_mask=am), atol=1e-6, rtol=0)


def test_weight_tying_and_sharing():
    tied, untied = _tiny(tie=True), _tiny(tie=False)
    assert tied.lm_head.weight is tied.tgt_embed.weight
    n = lambda m: sum(p.numel() for p in m.parameters())
    assert n(untied) - n(tied) == 11 * D                       # exactly V·d saved
    shared = Transformer(TransformerConfig(11, 11, d_model=D, n_heads=H, d_ff=FF,
                                           share_embeddings=True))
    assert shared.src_embed is shared.tgt_embed
    with pytest.raises(ValueError, match=r"^share_embeddings:"):
        Transformer(TransformerConfig(11, 12, share_embeddings=True))
    lm, lm_untied = (CausalLM(CausalLMConfig(11, d_model=D, n_heads=H, d_ff=FF, tie_weights=t))
                     for t in (True, False))
    assert n(lm_untied) - n(lm) == 11 * D


def test_transformer_bad_inputs():
    model = _tiny()
    src, tgt = torch.randint(4, 11, (2, 6)), torch.randint(4, 11, (2, 5))
    with pytest.raises(ValueError, match=r"^src: .*vocab_size=11"):
        model(torch.full((2, 6), 11), tgt)
    with pytest.raises(ValueError, match=r"^src_attention_mask: expected shape \(2, 6\)"):
        model(src, tgt, src_attention_mask=torch.ones(2, 5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"^src_attention_mask:"):
        model(src, tgt, src_attention_mask=torch.ones(2, 1, 6, dtype=torch.long))
    with pytest.raises(ValueError, match=r"^tgt_attention_mask:"):
        model(src, tgt, tgt_attention_mask=torch.ones(2, 5))   # float
    with pytest.raises(ValueError, match=r"^src: sequence length 600 exceeds max_len=512"):
        model(torch.randint(4, 11, (1, 600)), tgt[:1])
    with pytest.raises(ValueError, match=r"^max_len:"):
        model.greedy_decode(src, 513, BOS)
    with pytest.raises(ValueError, match=r"^positions:"):
        CausalLM(CausalLMConfig(11, positions="rotary"))


def test_greedy_decode_shape_and_consistency():
    model = _tiny()
    model.train()
    src = torch.randint(4, 11, (5, 6))
    out = model.greedy_decode(src, 7, BOS, eos_id=EOS)
    assert out.shape == (5, 7) and out.dtype == torch.long and model.training
    # without EOS handling, greedy output is the arg-max of teacher forcing on its own output
    free = model.greedy_decode(src, 7, BOS)
    model.eval()
    tgt_in = torch.cat([torch.full((5, 1), BOS), free[:, :-1]], dim=1)
    assert torch.equal(model(src, tgt_in).argmax(-1), free)
    lm = CausalLM(CausalLMConfig(11, d_model=D, n_heads=H, d_ff=FF))
    assert lm.generate(src, 3).shape == (5, 9)


@pytest.fixture
def one_thread():
    """Tiny models gain nothing from a second thread, and on a busy machine OpenMP's
    barriers made each step ~15x slower with 2 threads; one thread also fixes the numerics."""
    from course_lib.device import torch_threads

    with torch_threads(1):
        yield


@pytest.mark.parametrize("task", ["copy", "reverse"])
def test_learns_copy_and_reverse(task, one_thread):
    """300 Adam steps (about 5 s of CPU) on length-5 sequences over 6 content tokens."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    V, T = 10, 5
    model = Transformer(TransformerConfig(V, V, d_model=32, n_heads=4, d_ff=64))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
    sched = make_scheduler(opt, "constant", warmup_steps=20)
    loss_fn = lambda m, b: F.cross_entropy(m(b.src, b.tgt_in).reshape(-1, V), b.tgt_out.reshape(-1))
    hist = train(model, lambda step: make_batch(task, 32, T, V, g), loss_fn, steps=300,
                 optimizer=opt, scheduler=sched, clip=1.0, log_every=50, progress=False)
    test = make_batch(task, 500, T, V, torch.Generator().manual_seed(123))
    out = model.greedy_decode(test.src, T + 1, BOS, eos_id=EOS)
    acc = sequence_accuracy(out, test.tgt_out)
    assert hist.loss.iloc[-1] < 0.1 * hist.loss.iloc[0], hist.loss.tolist()
    assert acc >= 0.9, f"exact-sequence accuracy {acc:.3f}"


@pytest.mark.parametrize("norm_first", [False, True])
def test_fused_and_explicit_attention_paths_agree_in_stacks(norm_first):
    """TransformerEncoder / CausalLM forward (fused kernel) equals forward_with_attention
    (the explicit path that returns the weights), with causal + padding masks."""
    torch.manual_seed(3)
    g = torch.Generator().manual_seed(3)
    model = CausalLM(CausalLMConfig(vocab_size=20, d_model=D, n_heads=H, d_ff=FF, n_layers=2,
                                    norm_first=norm_first)).eval()
    ids = torch.randint(0, 20, (3, 9), generator=g)
    am = _attention_mask(3, 9, g)
    fast = model(ids, attention_mask=am)
    slow, weights = model.forward_with_attention(ids, attention_mask=am)
    assert len(weights) == 2 and weights[0].shape == (3, H, 9, 9)
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=0)
    # and gradients agree (training, no dropout)
    model.train()
    grads = []
    for logits_of in (model, lambda *a, **k: model.forward_with_attention(*a, **k)[0]):
        model.zero_grad()
        logits_of(ids, attention_mask=am).pow(2).mean().backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
