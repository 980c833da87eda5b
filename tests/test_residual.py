"""course_lib.residual.Residual against hand-written sums and PyTorch's Pre-LN encoder layer."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_lib.residual import Residual


def test_plain_residual_is_x_plus_sublayer():
    torch.manual_seed(0)
    sub = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
    x = torch.randn(2, 5, 8)
    torch.testing.assert_close(Residual(sub)(x), x + sub(x))


def test_prenorm_normalises_the_branch_only():
    torch.manual_seed(1)
    sub, norm = nn.Linear(6, 6), nn.LayerNorm(6)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 2.0)
        norm.bias.uniform_(-1.0, 1.0)
    x = 3 * torch.randn(4, 6) + 1
    expected = x + sub(F.layer_norm(x, (6,), norm.weight, norm.bias, norm.eps))
    torch.testing.assert_close(Residual(sub, norm)(x), expected)


def test_two_prenorm_residuals_equal_torch_pre_ln_encoder_layer():
    torch.manual_seed(2)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, norm_first=True).eval()

    class SelfAttention(nn.Module):
        def forward(self, h, key_padding_mask=None):
            return layer.self_attn(h, h, h, key_padding_mask=key_padding_mask, need_weights=False)[0]

    attention = Residual(SelfAttention(), layer.norm1)
    ffn = Residual(nn.Sequential(layer.linear1, nn.ReLU(), layer.linear2), layer.norm2)
    x = torch.randn(3, 7, 16)
    padding = torch.zeros(3, 7, dtype=torch.bool)
    padding[1, 5:] = True                                   # torch's convention: True = ignore
    with torch.no_grad():
        ours = ffn(attention(x, key_padding_mask=padding))  # extra keyword arguments reach the sublayer
        theirs = layer(x, src_key_padding_mask=padding)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


def test_gradient_has_an_identity_term():
    sub = nn.Linear(5, 5)
    nn.init.zeros_(sub.weight)
    nn.init.zeros_(sub.bias)
    x = torch.randn(3, 5, requires_grad=True)
    upstream = torch.randn(3, 5)
    (Residual(sub)(x) * upstream).sum().backward()
    torch.testing.assert_close(x.grad, upstream)           # dy/dx = I + dF/dx with dF/dx = 0


def test_parameters_are_registered():
    sub, norm = nn.Linear(4, 4), nn.LayerNorm(4)
    names = {name for name, _ in Residual(sub, norm).named_parameters()}
    assert names == {"sublayer.weight", "sublayer.bias", "norm.weight", "norm.bias"}
    assert {name for name, _ in Residual(sub).named_parameters()} == {"sublayer.weight", "sublayer.bias"}


@pytest.mark.parametrize("out_features", [7, 1])          # 1 would broadcast silently
def test_shape_change_raises_value_error_naming_both_shapes(out_features):
    x = torch.randn(2, 3, 5)
    with pytest.raises(ValueError, match=r"\(2, 3, 5\).*\(2, 3, " + str(out_features) + r"\)"):
        Residual(nn.Linear(5, out_features))(x)


