"""course_lib.complexity against FlopCounterMode, masked full attention and closed-form path lengths."""
import math

import pytest
import torch
from torch import nn

from course_lib.attention import MultiHeadAttention, scaled_dot_product_attention
from course_lib.complexity import (attention_flops, attention_hops, band_hops, conv1d_flops,
                                   count_flops, dilated_causal_hops, fit_power_law, max_path_length,
                                   recurrent_hops, restricted_attention_flops, restricted_self_attention,
                                   rnn_flops, saved_activation_bytes, sequential_depth)

CASES = [(1, 4, 1), (7, 12, 3), (33, 16, 2), (64, 64, 4), (100, 24, 8)]  # (n, d, heads)


@pytest.mark.parametrize("device", ["meta", "cpu"])
@pytest.mark.parametrize("n,d,heads", CASES)
def test_attention_flops_match_the_counter(device, n, d, heads):
    torch.manual_seed(0)
    layer = MultiHeadAttention(d, heads).to(device)
    x = torch.randn(3, n, d, device=device)
    assert count_flops(layer, x, x, x) == attention_flops(n, d, batch_size=3)
    assert count_flops(scaled_dot_product_attention, x, x, x) == \
        attention_flops(n, d, include_projections=False, batch_size=3)
    # torch's own layer does the same products, whatever the number of heads. need_weights=True
    # keeps it on explicit matmuls: its fused CPU kernel has no FLOP formula (counted as 0).
    reference = nn.MultiheadAttention(d, heads, batch_first=True, device=device)
    assert count_flops(reference, x, x, x, need_weights=True) == attention_flops(n, d, batch_size=3)


@pytest.mark.parametrize("n,d,_", CASES)
def test_rnn_and_conv_flops_match_the_counter(n, d, _):
    x = torch.randn(2, n, d, device="meta")
    assert count_flops(nn.RNN(d, d, batch_first=True, device="meta"), x) == rnn_flops(n, d, batch_size=2)
    for k in (1, 3, 7):
        conv = nn.Conv1d(d, d, k, padding=k // 2, device="meta")
        assert count_flops(conv, x.transpose(1, 2)) == conv1d_flops(n, d, k, batch_size=2)


@pytest.mark.parametrize("n,d,window", [(1, 4, 1), (9, 8, 3), (40, 16, 7), (17, 5, 33)])
def test_restricted_attention_flops_match_the_counter(n, d, window):
    x = torch.randn(2, n, d, device="meta")
    assert count_flops(restricted_self_attention, x, x, x, window) == \
        restricted_attention_flops(n, d, window, include_projections=False, batch_size=2)


@pytest.mark.parametrize("T,window", [(1, 1), (6, 1), (11, 5), (8, 7), (5, 21)])
def test_restricted_attention_equals_banded_full_attention(T, window):
    g = torch.Generator().manual_seed(T + window)
    q, k = torch.randn(2, 3, T, 8, generator=g), torch.randn(2, 3, T, 8, generator=g)
    v = torch.randn(2, 3, T, 5, generator=g)
    positions = torch.arange(T)
    band = (positions[:, None] - positions[None, :]).abs() <= window // 2
    expected, expected_weights = scaled_dot_product_attention(q, k, v, band)
    out, weights = restricted_self_attention(q, k, v, window)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    # weights[..., i, m] belongs to key i - window//2 + m
    for i in range(T):
        for m in range(window):
            j = i - window // 2 + m
            want = expected_weights[..., i, j] if 0 <= j < T else torch.zeros(2, 3)
            torch.testing.assert_close(weights[..., i, m], want, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 27, 50])
def test_max_path_length_matches_the_closed_forms(n):
    assert max_path_length(attention_hops(n), n) == 1
    assert max_path_length(recurrent_hops(n), n) == n
    for k in (3, 5, 9):
        assert max_path_length(band_hops(n, k), n) == max(1, math.ceil((n - 1) / (k // 2)))
    for k in (2, 3, 4):
        expected = 1 if n == 1 else max(1, math.ceil(math.log(n) / math.log(k) - 1e-9))
        assert max_path_length(dilated_causal_hops(n, k), n) == expected


def test_max_path_length_needs_enough_hops():
    with pytest.raises(ValueError, match="max_hops=3"):
        max_path_length(recurrent_hops(10), 10, max_hops=3)


def test_sequential_depth_counts_the_chain_of_products():
    d = 8
    for n in (1, 5, 12):
        x = torch.randn(1, n, d, device="meta", requires_grad=True)
        assert sequential_depth(nn.RNN(d, d, batch_first=True, device="meta")(x)[0]) == n
        assert sequential_depth(nn.Conv1d(d, d, 3, padding=1, device="meta")(x.transpose(1, 2))) == 1
        assert sequential_depth(MultiHeadAttention(d, 2).to("meta")(x, x, x)[0]) == 4
    w = torch.randn(d, d, requires_grad=True)
    h = torch.randn(3, d)
    chain = h
    for _ in range(6):
        chain = torch.tanh(chain @ w) + h @ w     # the second product is parallel to the chain
    assert sequential_depth(chain) == 6
    with pytest.raises(ValueError, match="output: expected a tensor with a grad_fn"):
        sequential_depth(torch.randn(3))


def test_saved_activation_bytes_counts_distinct_storages():
    x = torch.randn(5, 7, requires_grad=True)
    w = torch.randn(7, 3, requires_grad=True)
    assert saved_activation_bytes(torch.matmul, x, w) == (5 * 7 + 7 * 3) * 4
    assert saved_activation_bytes(lambda a: a * a, x) == 5 * 7 * 4          # x saved twice, one storage
    assert saved_activation_bytes(torch.matmul, x, w, exclude=[w]) == 5 * 7 * 4
    conv = nn.Conv1d(7, 3, 3, padding=1)
    signal = torch.randn(2, 7, 10, requires_grad=True)
    assert saved_activation_bytes(conv, signal, exclude=conv.parameters()) == 2 * 7 * 10 * 4
    q = torch.randn(1, 64, 8, requires_grad=True)
    saved = saved_activation_bytes(scaled_dot_product_attention, q, q, q)
    assert saved >= 64 * 64 * 4, "the explicit attention keeps its (n, n) weights"


def test_fit_power_law_recovers_exponents():
    ns, ds = [8, 16, 32, 8, 8], [4, 4, 4, 16, 64]
    fit = fit_power_law([attention_flops(n, d, include_projections=False) for n, d in zip(ns, ds)], n=ns, d=ds)
    assert fit["n"] == pytest.approx(2) and fit["d"] == pytest.approx(1) and fit["c"] == pytest.approx(4)
    with pytest.raises(ValueError, match="do not vary each variable independently"):
        fit_power_law([1, 2, 3], n=[1, 2, 4], d=[1, 2, 4])
    with pytest.raises(ValueError, match="d: expected 3 or more positive finite numbers like values"):
        fit_power_law([1, 2, 3], n=[1, 2, 4], d=[1, 2])


@pytest.mark.parametrize("call,message", [
    (lambda: conv1d_flops(8, 4, 4), r"kernel_size: expected an odd positive int .*got 4"),
    (lambda: restricted_attention_flops(8, 4, 2), r"window: expected an odd positive int .*got 2"),
    (lambda: restricted_self_attention(torch.randn(2, 5, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 4), 2),
     r"window: expected an odd positive int .*got 2"),
    (lambda: band_hops(8, 4), r"window: expected an odd positive int .*got 4"),
])
def test_bad_inputs_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()
