"""course_lib.attention against PyTorch's own implementations."""
import pytest
import torch
import torch.nn.functional as F

from course_lib.attention import MultiHeadAttention, merge_heads, scaled_dot_product_attention, split_heads


@pytest.mark.parametrize("seed", range(5))
def test_sdpa_matches_torch_without_mask(seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(3, 2, 7, 16, generator=g)
    k = torch.randn(3, 2, 9, 16, generator=g)
    v = torch.randn(3, 2, 9, 8, generator=g)
    out, weights = scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), atol=1e-6, rtol=0)
    torch.testing.assert_close(weights, torch.softmax(q @ k.transpose(-2, -1) / 4.0, -1), atol=1e-6, rtol=0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 7), atol=1e-6, rtol=0)


@pytest.mark.parametrize("mask_shape", [(7, 9), (1, 1, 7, 9), (3, 1, 1, 9), (3, 2, 7, 9)])
def test_sdpa_matches_torch_with_boolean_masks(mask_shape):
    g = torch.Generator().manual_seed(1)
    q, k, v = torch.randn(3, 2, 7, 16, generator=g), torch.randn(3, 2, 9, 16, generator=g), torch.randn(3, 2, 9, 8, generator=g)
    mask = torch.rand(mask_shape, generator=g) > 0.5
    mask[..., 0] = True
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-6, rtol=0)
    assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()


def test_fully_masked_rows_give_zeros_like_torch():
    q = k = v = torch.randn(1, 4, 8)
    mask = torch.ones(1, 4, 4, dtype=torch.bool)
    mask[0, 1] = False
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.equal(out[0, 1], torch.zeros(8)) and torch.equal(weights[0, 1], torch.zeros(4))
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-6, rtol=0)


def test_fully_masked_rows_have_finite_gradients():
    q = torch.randn(1, 3, 4, requires_grad=True)
    mask = torch.tensor([[True, False, True], [False, False, False], [True, True, True]])
    out, _ = scaled_dot_product_attention(q, q, q, mask)
    out.sum().backward()
    assert torch.isfinite(q.grad).all()


def test_split_merge_roundtrip():
    x = torch.randn(2, 5, 12)
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    assert torch.equal(heads[:, 1], x[..., 4:8])  # head h sees features h*head_dim:(h+1)*head_dim
    assert torch.equal(merge_heads(heads), x)


def _torch_mha_from(ours: MultiHeadAttention) -> torch.nn.MultiheadAttention:
    ref = torch.nn.MultiheadAttention(ours.d_model, ours.n_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        ref.out_proj.load_state_dict(ours.out_proj.state_dict())
    return ref.eval()


@pytest.mark.parametrize("seed", range(3))
def test_multi_head_matches_nn_multihead_attention(seed):
    torch.manual_seed(seed)
    ours = MultiHeadAttention(d_model=32, n_heads=4).eval()
    ref = _torch_mha_from(ours)
    query, memory = torch.randn(3, 6, 32), torch.randn(3, 9, 32)
    keep = torch.rand(3, 9) > 0.3
    keep[:, 0] = True
    causal = torch.ones(6, 9, dtype=torch.bool).tril()
    for mask, kwargs in [(None, {}),
                         (keep[:, None, None, :], {"key_padding_mask": ~keep}),
                         (causal, {"attn_mask": ~causal})]:
        out, weights = ours(query, memory, memory, mask)
        ref_out, ref_weights = ref(query, memory, memory, average_attn_weights=False, **kwargs)
        torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=0)
        torch.testing.assert_close(weights, ref_weights, atol=1e-5, rtol=0)


def test_multi_head_gradients_flow_to_every_projection():
    mha = MultiHeadAttention(16, 2)
    x = torch.randn(2, 4, 16)
    mha(x, x, x)[0].pow(2).sum().backward()
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        assert getattr(mha, name).weight.grad.abs().sum() > 0, name


@pytest.mark.parametrize("mask_kind", ["none", "padding", "causal", "causal+padding", "fully-masked-row"])
def test_need_weights_false_runs_the_fused_kernel_with_the_same_output(mask_kind):
    """need_weights=False (torch.nn.MultiheadAttention's name) returns no weights and the same
    output as the explicit path, for every mask convention the course uses."""
    torch.manual_seed(4)
    mha = MultiHeadAttention(d_model=24, n_heads=3).eval()
    B, T = 4, 6
    x = torch.randn(B, T, 24)
    keep = torch.ones(B, T, dtype=torch.bool)
    keep[1, 4:] = False
    keep[2, 1:] = False                                       # one real token
    mask = {"none": None,
            "padding": keep[:, None, None, :],
            "causal": torch.ones(T, T, dtype=torch.bool).tril(),
            "causal+padding": keep[:, None, None, :] & torch.ones(T, T, dtype=torch.bool).tril(),
            "fully-masked-row": keep[:, None, :, None] & keep[:, None, None, :]}[mask_kind]
    out, weights = mha(x, x, x, mask)                         # the default keeps the weights
    assert weights.shape == (B, 3, T, T)
    fast, none = mha(x, x, x, mask, need_weights=False)
    assert none is None
    torch.testing.assert_close(fast, out, atol=1e-6, rtol=0)
    if mask_kind == "fully-masked-row":                       # padded queries: zero attention
        torch.testing.assert_close(fast[1, 4:], mha.out_proj.bias.expand(2, 24), atol=1e-6, rtol=0)


def test_need_weights_false_gradients_and_dropout():
    torch.manual_seed(5)
    mha = MultiHeadAttention(d_model=16, n_heads=2)
    x = torch.randn(2, 5, 16)
    grads = []
    for need in (True, False):
        mha.zero_grad()
        mha(x, x, x, need_weights=need)[0].pow(2).sum().backward()
        grads.append([p.grad.clone() for p in mha.parameters()])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    # dropout on the attention probabilities in training only, on both paths
    mha.dropout = 0.5
    mha.train()
    assert not torch.equal(mha(x, x, x, need_weights=False)[0], mha(x, x, x, need_weights=False)[0])
    mha.eval()
    torch.testing.assert_close(mha(x, x, x, need_weights=False)[0], mha(x, x, x)[0], atol=1e-6, rtol=0)
