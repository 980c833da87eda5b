"""course_lib.data.toy.make_spirals: shapes, balance, determinism and the spiral geometry."""
import math

import pytest
import torch

from course_lib.data.toy import make_spirals


def test_shapes_dtypes_and_balance():
    x, y = make_spirals(101, torch.Generator().manual_seed(0))
    assert x.shape == (101, 2) and x.dtype == torch.float32
    assert y.shape == (101,) and y.dtype == torch.int64
    assert set(y.tolist()) == {0, 1} and int((y == 0).sum()) == 50


def test_seeded():
    a = make_spirals(64, torch.Generator().manual_seed(3))
    b = make_spirals(64, torch.Generator().manual_seed(3))
    c = make_spirals(64, torch.Generator().manual_seed(4))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def test_noise_free_points_lie_on_their_arm():
    turns = 1.5
    x, y = make_spirals(200, torch.Generator().manual_seed(1), turns=turns, noise=0.0)
    r = x.norm(dim=1)
    assert ((r > 0.04) & (r <= 1.0 + 1e-6)).all()
    # angle(t) = 2π·turns·t + π·y with t = r: the residual angle is a multiple of 2π
    offset = torch.atan2(x[:, 1], x[:, 0]) - 2 * math.pi * turns * r - math.pi * y
    wrapped = torch.remainder(offset + math.pi, 2 * math.pi) - math.pi
    assert wrapped.abs().max() < 1e-4


@pytest.mark.parametrize("kwargs, message", [({"n": 1}, "n: expected"), ({"n": 2.5}, "n: expected")])
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_spirals(generator=torch.Generator(), **kwargs)
