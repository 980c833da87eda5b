"""The course LayerNorm against torch.nn.LayerNorm."""
import pytest
import torch
from torch import nn

from course_lib.layernorm import LayerNorm


@pytest.mark.parametrize("shape, normalized_shape, eps", [
    ((4, 7, 16), 16, 1e-5),
    ((3, 5, 8), (5, 8), 1e-5),
    ((6, 24), 24, 1e-12),
])
def test_matches_torch_forward_and_backward(shape, normalized_shape, eps):
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(shape, generator=g, dtype=torch.float64) * 3 + 1).requires_grad_()
    ref = nn.LayerNorm(normalized_shape, eps=eps, dtype=torch.float64)
    ours = LayerNorm(normalized_shape, eps=eps).double()
    with torch.no_grad():
        ref.weight.copy_(torch.randn(ref.weight.shape, generator=g, dtype=torch.float64))
        ref.bias.copy_(torch.randn(ref.bias.shape, generator=g, dtype=torch.float64))
    ours.load_state_dict(ref.state_dict())                 # same parameter names
    torch.testing.assert_close(ours(x), ref(x), atol=1e-12, rtol=0)
    grad_out = torch.randn(shape, generator=g, dtype=torch.float64)
    g_ours = torch.autograd.grad(ours(x), (x, ours.weight, ours.bias), grad_out)
    g_ref = torch.autograd.grad(ref(x), (x, ref.weight, ref.bias), grad_out)
    for a, b in zip(g_ours, g_ref):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)


def test_float32_and_defaults():
    x = torch.randn(2, 3, 10)
    ours, ref = LayerNorm(10), nn.LayerNorm(10)
    assert ours.eps == ref.eps == 1e-5
    torch.testing.assert_close(ours(x), ref(x), atol=1e-6, rtol=0)
    out = ours(x)   # weight 1, bias 0: zero mean and unit (biased) variance per vector
    torch.testing.assert_close(out.mean(-1), torch.zeros(2, 3), atol=1e-6, rtol=0)
    torch.testing.assert_close(out.var(-1, unbiased=False), torch.ones(2, 3), atol=1e-4, rtol=0)


def test_rows_do_not_see_their_neighbours():
    ln = LayerNorm(8)
    x = torch.randn(4, 8)
    alone = ln(x[:1])
    batched = ln(torch.cat([x[:1], 100 * torch.randn(3, 8)]))
    assert torch.equal(alone[0], batched[0])


