"""EncoderLayer / DecoderLayer against PyTorch's layers, masks, causality, the full model."""
import pytest
import torch
from torch import nn

from course_lib.attention import MultiHeadAttention
from course_lib.transformer import (DecoderLayer, EncoderLayer,
                                    causal_mask, padding_mask,
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
    got, weights = ours(x, mask=mask, return_attention=True)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)
    assert weights.shape == (B, H, T, T)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T), atol=1e-6, rtol=0)
    if mask is not None:
        assert (weights.masked_select(~mask.expand(B, H, T, T)) == 0).all()
    torch.testing.assert_close(ours(x, mask=mask), got, atol=0, rtol=0)


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


@pytest.mark.parametrize("call, name", [
    (lambda l: l(torch.randn(2, 5, D + 1)), "x"),
    (lambda l: l(torch.randn(2, 5, D), mask=torch.ones(2, 5, 5)), "mask"),            # float mask
    (lambda l: l(torch.randn(2, 5, D), mask=torch.ones(2, 1, 1, 4, dtype=torch.bool)), "mask"),
    (lambda l: l(torch.randn(5, D)), "x"),
])
def test_encoder_layer_bad_inputs(call, name):
    with pytest.raises(ValueError, match=f"^{name}:"):
        call(EncoderLayer(D, H, FF))


@pytest.mark.parametrize("kwargs, name", [
    (dict(memory=torch.randn(2, 4, D + 2)), "memory"),
    (dict(memory=torch.randn(3, 4, D)), "memory"),
    (dict(memory=torch.randn(2, 4, D), self_mask=torch.ones(6, 6, dtype=torch.bool)), "self_mask"),
    (dict(memory=torch.randn(2, 4, D), memory_mask=causal_mask(5)), "memory_mask"),
    (dict(memory=torch.randn(2, 4, D), memory_mask=torch.ones(2, 1, 1, 4, dtype=torch.long)),
     "memory_mask"),
])
def test_decoder_layer_bad_inputs(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name}:"):
        DecoderLayer(D, H, FF)(torch.randn(2, 5, D), **kwargs)


def test_bad_constructor_and_mask_args():
    with pytest.raises(ValueError, match="^activation:"):
        EncoderLayer(D, H, FF, activation="swish")
    with pytest.raises(ValueError, match="d_model"):
        EncoderLayer(30, 4, FF)
    with pytest.raises(ValueError, match="^attention_mask:"):
        padding_mask(torch.tensor([[1, 2, 0]]))
    with pytest.raises(ValueError, match="^attention_mask:"):
        padding_mask(torch.ones(2, 1, 3))
    with pytest.raises(ValueError, match="^T:"):
        causal_mask(0)
