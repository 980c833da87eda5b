"""Transformer-XL pieces against independent references: explicit distance indexing, a per-pair
score loop, causality, detached memory, and ValueErrors that name the argument."""
import math

import pytest
import torch

from course_lib.transformer_xl import (RelativeMultiHeadAttention, TransformerXL, TransformerXLConfig,
                                       memory_mask, rel_shift, rel_shift_by_index, relative_sinusoid,
                                       update_memory)


@pytest.mark.parametrize("shape", [(5, 5), (3, 7), (1, 4), (2, 3, 4, 9), (2, 6, 6)])
def test_rel_shift_equals_explicit_distance_indexing(shape):
    """Closed form: y[i, j] = x[i, j + Q - 1 - i] wherever j <= i + K - Q (loops, no tensors tricks)."""
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    y = rel_shift(x)
    Q, K = shape[-2], shape[-1]
    assert y.shape == x.shape
    flat_x, flat_y = x.reshape(-1, Q, K), y.reshape(-1, Q, K)
    for b in range(flat_x.shape[0]):
        for i in range(Q):
            for j in range(K):
                if j <= i + K - Q:
                    assert flat_y[b, i, j] == flat_x[b, i, j + Q - 1 - i]
    keep = memory_mask(Q, K - Q)
    assert torch.equal(rel_shift(x).masked_fill(~keep, 0), rel_shift_by_index(x))


def test_relative_sinusoid_rows_are_descending_distances():
    R = relative_sinusoid(6, 8)
    for c in range(6):
        distance = 6 - 1 - c
        for i in range(4):
            freq = 1 / 10000 ** (2 * i / 8)
            assert R[c, i].item() == pytest.approx(math.sin(distance * freq), abs=1e-6)
            assert R[c, 4 + i].item() == pytest.approx(math.cos(distance * freq), abs=1e-6)


def test_relative_scores_equal_a_per_pair_loop():
    """(q_i + u)·k_j + (q_i + v)·W_R R(distance), distance = (M + i) - j, built pair by pair."""
    torch.manual_seed(0)
    d, H, M, T = 12, 3, 4, 5
    attn = RelativeMultiHeadAttention(d, H)
    with torch.no_grad():
        attn.u.normal_()
        attn.v.normal_()
    h, mem = torch.randn(2, T, d), torch.randn(2, M, d)
    context = torch.cat([mem, h], 1)
    got = attn.scores(h, context, relative_sinusoid(M + T, d))
    dh = d // H
    q = attn.q_net(h).view(2, T, H, dh)
    k = attn.kv_net(context)[..., :d].view(2, M + T, H, dh)
    table = relative_sinusoid(M + T, d).flip(0)              # row = distance
    for b in range(2):
        for n in range(H):
            for i in range(T):
                for j in range(M + i + 1):
                    r = attn.r_net(table[M + i - j]).view(H, dh)[n]
                    want = ((q[b, i, n] + attn.u[n]) @ k[b, j, n] + (q[b, i, n] + attn.v[n]) @ r) / math.sqrt(dh)
                    assert got[b, n, i, j].item() == pytest.approx(want.item(), abs=1e-5)


@pytest.mark.parametrize("positions", ["relative", "absolute"])
@pytest.mark.parametrize("mem_len", [0, 6])
def test_causal_future_tokens_do_not_change_earlier_outputs(positions, mem_len):
    torch.manual_seed(1)
    model = TransformerXL(TransformerXLConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32,
                                              mem_len=mem_len, positions=positions)).eval()
    first = torch.randint(0, 20, (3, 8))
    x = torch.randint(0, 20, (3, 8))
    with torch.no_grad():
        _, memory = model(first)
        out, _ = model(x, memory)
        for t in range(1, 8):
            changed = x.clone()
            changed[:, t:] = torch.randint(0, 20, changed[:, t:].shape)
            again, _ = model(changed, memory)
            assert torch.allclose(out[:, :t], again[:, :t], atol=1e-6)
            assert not torch.allclose(out[:, t:], again[:, t:], atol=1e-3)


def test_memory_reaches_the_next_segment_only_with_mem_len():
    torch.manual_seed(2)
    for mem_len, moves in ((0, False), (8, True)):
        model = TransformerXL(TransformerXLConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32,
                                                  mem_len=mem_len)).eval()
        x = torch.randint(0, 20, (2, 8))
        with torch.no_grad():
            _, m1 = model(torch.randint(0, 20, (2, 8)))
            _, m2 = model(torch.randint(0, 20, (2, 8)))
            a, b = model(x, m1)[0], model(x, m2)[0]
        assert (not torch.allclose(a, b, atol=1e-4)) == moves


def test_memory_is_detached_and_keeps_the_last_mem_len_positions():
    torch.manual_seed(3)
    model = TransformerXL(TransformerXLConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32, mem_len=10))
    _, memory = model(torch.randint(0, 20, (2, 6)))
    assert [m.shape[1] for m in memory] == [6, 6]
    logits, memory = model(torch.randint(0, 20, (2, 6)), memory)
    assert [m.shape[1] for m in memory] == [10, 10]
    assert all(not m.requires_grad and m.grad_fn is None for m in memory)
    logits.sum().backward()                       # gradient stops at the boundary: no error, no leak
    h = torch.randn(2, 3, 4, requires_grad=True)
    out = update_memory(torch.randn(2, 5, 4), h, 4)
    assert out.shape == (2, 4, 4) and not out.requires_grad
    assert torch.equal(out[:, 1:], h.detach())
    assert update_memory(torch.randn(2, 5, 4), h, 0).shape == (2, 0, 4)


def test_bad_inputs_raise_value_errors_naming_the_argument():
    with pytest.raises(ValueError, match="x"):
        rel_shift(torch.randn(4, 3))             # K < Q: the reshapes would return garbage
    with pytest.raises(ValueError, match="mem_len"):
        update_memory(torch.randn(2, 5, 4), torch.randn(2, 3, 4), -1)
    with pytest.raises(ValueError, match="positions"):
        TransformerXL(TransformerXLConfig(vocab_size=10, positions="rotary"))
    with pytest.raises(ValueError, match="mem_len"):
        TransformerXL(TransformerXLConfig(vocab_size=10, mem_len=-2))
    model = TransformerXL(TransformerXLConfig(vocab_size=10, d_model=8, n_heads=2, d_ff=16))
    with pytest.raises(ValueError, match="input_ids"):
        model(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="memory"):          # one layer's memory for two layers
        model(torch.zeros(2, 5, dtype=torch.long), [torch.zeros(2, 3, 8)])


def test_keys_and_values_are_projected_once_per_layer():
    """[memory; segment] goes through kv_net once: keys and values come from one projection."""
    from course_lib.transformer_xl import RelativeMultiHeadAttention, relative_sinusoid
    torch.manual_seed(0)
    attn = RelativeMultiHeadAttention(16, 2)
    calls = []
    attn.kv_net.register_forward_hook(lambda *args: calls.append(1))
    h, memory = torch.randn(2, 5, 16), torch.randn(2, 3, 16)
    attn(h, memory, relative_sinusoid(8, 16))
    assert len(calls) == 1


def test_counting_positions_start_where_the_offset_says():
    torch.manual_seed(0)
    restart = TransformerXL(TransformerXLConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32, mem_len=0,
                                                positions="absolute"))
    counting = TransformerXL(TransformerXLConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32, mem_len=0,
                                                 positions="absolute, counting"))
    counting.load_state_dict(restart.state_dict())
    ids = torch.randint(0, 20, (2, 6))
    # offset 0: the same rows 0..5 as a segment that restarts
    torch.testing.assert_close(counting(ids, position_offset=0)[0], restart(ids)[0])
    # a later offset reads other rows; the restarting model ignores the offset
    assert not torch.allclose(counting(ids, position_offset=6)[0], restart(ids)[0])
    torch.testing.assert_close(restart(ids, position_offset=6)[0], restart(ids)[0])
    # the rows are the stream's: what enters the first layer for a 6-token segment at offset 6 is what
    # the second half of one 12-token segment gets (rows 6..11)
    seen = []
    counting.layers[0].register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    counting(torch.cat([torch.randint(0, 20, (2, 6)), ids], dim=1))
    counting(ids, position_offset=6)
    torch.testing.assert_close(seen[1], seen[0][:, 6:])
    with pytest.raises(ValueError, match="position_offset: expected an int >= 0, got -1"):
        counting(ids, position_offset=-1)
