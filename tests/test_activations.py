"""GELU (both forms), the activation look-up and the position-wise FFN."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_lib.activations import GELU, gelu, get_activation
from course_lib.feedforward import FeedForward


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype, atol", [(torch.float64, 1e-14), (torch.float32, 1e-6)])
def test_gelu_matches_torch(approximate, dtype, atol):
    x = torch.cat([torch.linspace(-12, 12, 2001, dtype=dtype), torch.randn(500, dtype=dtype) * 4])
    torch.testing.assert_close(gelu(x, approximate), F.gelu(x, approximate=approximate),
                               atol=atol, rtol=0)
    torch.testing.assert_close(GELU(approximate)(x), nn.GELU(approximate)(x), atol=atol, rtol=0)


def test_gelu_forms_differ_and_gradient():
    x = torch.linspace(-3, 3, 101, dtype=torch.float64, requires_grad=True)
    assert (gelu(x, "none") - gelu(x, "tanh")).abs().max() > 1e-5   # two different functions
    (g_ours,) = torch.autograd.grad(gelu(x).sum(), x)
    (g_ref,) = torch.autograd.grad(F.gelu(x).sum(), x)
    torch.testing.assert_close(g_ours, g_ref, atol=1e-12, rtol=0)


def test_get_activation():
    x = torch.randn(100)
    torch.testing.assert_close(get_activation("relu")(x), F.relu(x))
    torch.testing.assert_close(get_activation("gelu")(x), F.gelu(x), atol=1e-6, rtol=0)
    torch.testing.assert_close(get_activation("gelu_tanh")(x), F.gelu(x, approximate="tanh"),
                               atol=1e-6, rtol=0)
    assert torch.equal(get_activation("identity")(x), x)
    with pytest.raises(ValueError, match=r"^activation: .*'swish'"):
        get_activation("swish")
    with pytest.raises(ValueError, match=r"^approximate:"):
        gelu(x, "fast")
    with pytest.raises(ValueError, match=r"^approximate:"):
        GELU("fast")


@pytest.mark.parametrize("activation, fn", [("relu", F.relu), ("gelu", F.gelu)])
def test_feedforward(activation, fn):
    ff = FeedForward(16, 40, activation=activation).eval()
    assert set(ff.state_dict()) == {"linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"}
    x = torch.randn(3, 5, 16)
    expected = F.linear(fn(F.linear(x, ff.linear1.weight, ff.linear1.bias)),
                        ff.linear2.weight, ff.linear2.bias)
    torch.testing.assert_close(ff(x), expected, atol=1e-6, rtol=0)
    # position-wise: each token is transformed on its own
    torch.testing.assert_close(ff(x[:, 2:3]), ff(x)[:, 2:3], atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match=r"^activation:"):
        FeedForward(16, 40, activation="tanh")
