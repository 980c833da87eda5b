"""Sinusoidal and learned positions, and the scaled token embedding."""
import math

import pytest
import torch
from torch import nn

from course_lib.embedding import ScaledEmbedding
from course_lib.positional import (LearnedPositionalEmbedding, SinusoidalPositionalEncoding,
                                   sinusoidal_table)


@pytest.mark.parametrize("d_model", [16, 7])
def test_table_matches_closed_form(d_model):
    pe = sinusoidal_table(600, d_model)
    assert pe.shape == (600, d_model) and pe.dtype == torch.float32
    for p in (0, 1, 5, 37, 511, 599):
        for j in range(d_model):
            i = j // 2
            angle = p / 10000 ** (2 * i / d_model)
            expected = math.sin(angle) if j % 2 == 0 else math.cos(angle)
            assert abs(pe[p, j].item() - expected) < 1e-6, (p, j)


@pytest.mark.parametrize("k", [1, 3, 50])
def test_shift_is_a_fixed_rotation(k):
    """PE[p + k] = M_k PE[p] for every p, with M_k block-diagonal 2x2 rotations."""
    d = 16
    pe = sinusoidal_table(200, d).double()
    M = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        w = 1 / 10000 ** (2 * i / d)
        c, s = math.cos(k * w), math.sin(k * w)
        # sin(a + b) = sin a cos b + cos a sin b;  cos(a + b) = cos a cos b - sin a sin b
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)
    shifted = pe[:-k] @ M.T                                  # (200 - k, d): M applied to each row
    torch.testing.assert_close(shifted, pe[k:], atol=1e-5, rtol=0)
    assert (pe[k:] - pe[:-k]).abs().max() > 0.1              # the map is not the identity


def test_sinusoidal_module_adds_the_table():
    enc = SinusoidalPositionalEncoding(12, max_len=64)
    assert list(enc.parameters()) == [] and "pe" not in enc.state_dict()
    x = torch.randn(2, 10, 12)
    torch.testing.assert_close(enc(x), x + sinusoidal_table(64, 12)[:10], atol=0, rtol=0)
    pos = torch.tensor([[3, 4, 5], [60, 61, 62]])
    torch.testing.assert_close(enc(x[:, :3], positions=pos), x[:, :3] + sinusoidal_table(64, 12)[pos],
                               atol=0, rtol=0)


def test_learned_module_and_untrained_rows():
    enc = LearnedPositionalEmbedding(32, 8)
    assert enc.weight.shape == (32, 8)
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(enc(x), x + enc.weight[:5], atol=0, rtol=0)
    enc(x).sum().backward()
    assert enc.weight.grad[:5].abs().sum() > 0
    assert enc.weight.grad[5:].abs().sum() == 0   # rows beyond the training length never learn


@pytest.mark.parametrize("make", [lambda: SinusoidalPositionalEncoding(8, max_len=512),
                                  lambda: LearnedPositionalEmbedding(512, 8)])
def test_longer_than_table_raises(make):
    enc = make()
    with pytest.raises(ValueError, match=r"^x: sequence length 600 exceeds max_len=512"):
        enc(torch.randn(1, 600, 8))
    enc(torch.randn(1, 512, 8))                                  # the last row is usable
    with pytest.raises(ValueError, match=r"^positions: .*max_len=512.*max 512"):
        enc(torch.randn(1, 2, 8), positions=torch.tensor([0, 512]))
    with pytest.raises(ValueError, match=r"^positions: .*got min -1"):     # would read from the end
        enc(torch.randn(1, 2, 8), positions=torch.tensor([-1, 1]))


def test_scaled_embedding():
    emb = ScaledEmbedding(50, 16)
    ids = torch.randint(0, 50, (3, 7))
    ref = nn.Embedding(50, 16)
    ref.weight.data.copy_(emb.weight.data)
    torch.testing.assert_close(emb(ids), ref(ids) * 4.0, atol=0, rtol=0)   # √16 = 4
    plain = ScaledEmbedding(50, 16, scale=False)
    plain.load_state_dict(emb.state_dict())
    torch.testing.assert_close(plain(ids), ref(ids), atol=0, rtol=0)
    assert emb.weight.shape == nn.Linear(16, 50).weight.shape       # why tying needs no transpose
    # N(0, 1/d) init: after scaling, entries have variance ≈ 1
    big = ScaledEmbedding(4000, 64)
    assert abs(big(torch.arange(4000)).var().item() - 1.0) < 0.05
    with pytest.raises(IndexError):                   # the models check ids at their entry
        emb(torch.tensor([[1, 50]]))
