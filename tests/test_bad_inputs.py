"""Bad inputs to the public functions raise ValueError naming the argument and the shapes."""
import pytest
import torch

from course_lib.attention import MultiHeadAttention, merge_heads, scaled_dot_product_attention, split_heads

x3 = torch.randn(2, 5, 8)
mha = MultiHeadAttention(8, 2)

CASES = [
    ("q rank 1", lambda: scaled_dot_product_attention(torch.randn(8), x3, x3), r"q: .*2 dimensions.*\(8,\)"),
    ("k not a tensor", lambda: scaled_dot_product_attention(x3, [[1.0]], x3), r"k: expected a torch.Tensor"),
    ("d_k mismatch", lambda: scaled_dot_product_attention(x3, torch.randn(2, 5, 4), x3), r"k: .*d_k=8.*\(2, 5, 4\)"),
    ("T_k mismatch", lambda: scaled_dot_product_attention(x3, x3, torch.randn(2, 6, 8)), r"v: .*T_k=5.*\(2, 6, 8\)"),
    ("mask float", lambda: scaled_dot_product_attention(x3, x3, x3, torch.ones(5, 5)), r"mask: .*torch.bool.*float32"),
    ("mask wrong shape", lambda: scaled_dot_product_attention(x3, x3, x3, torch.ones(4, 5, dtype=torch.bool)),
     r"mask: shape \(4, 5\) does not broadcast to \(2, 5, 5\)"),
    ("mask too many dims", lambda: scaled_dot_product_attention(x3, x3, x3, torch.ones(3, 2, 5, 5, dtype=torch.bool)),
     r"mask: shape \(3, 2, 5, 5\)"),
    ("n_heads does not divide", lambda: MultiHeadAttention(10, 3), r"d_model=10 must be divisible by n_heads=3"),
    ("mha query rank 2", lambda: mha(torch.randn(5, 8), x3, x3), r"query: expected a 3-D tensor \(B, T, d_model\), got shape \(5, 8\)"),
    ("mha wrong d_model", lambda: mha(torch.randn(2, 5, 6), x3, x3), r"query: expected size 8 at dim -1 \(d_model\), got shape \(2, 5, 6\)"),
    ("mha key/value length", lambda: mha(x3, x3, torch.randn(2, 4, 8)), r"value: expected \(B, T_k\) = \(2, 5\)"),
    ("mha batch mismatch", lambda: mha(x3, torch.randn(3, 5, 8), torch.randn(3, 5, 8)), r"key: batch size 3 differs from query's 2"),
    ("mha mask shape", lambda: mha(x3, x3, x3, torch.ones(2, 1, 5, 4, dtype=torch.bool)),
     r"mask: shape \(2, 1, 5, 4\) does not broadcast to \(2, 2, 5, 5\)"),
    ("split_heads rank", lambda: split_heads(torch.randn(5, 8), 2), r"x: expected a 3-D tensor"),
    ("split_heads divisibility", lambda: split_heads(x3, 3), r"d_model=8 must be divisible by n_heads=3"),
    ("merge_heads rank", lambda: merge_heads(x3), r"x: expected a 4-D tensor \(B, n_heads, T, head_dim\)"),
]


@pytest.mark.parametrize("name,call,message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_value_error_naming_the_argument(name, call, message):
    with pytest.raises(ValueError, match=message):
        call()
