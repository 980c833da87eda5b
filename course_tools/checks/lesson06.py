"""Graded checks for lesson 06: a token embedding multiplied by √d_model."""
import math

import torch
from torch import nn

from course_lib.embedding import ScaledEmbedding as Reference
from ..grading import CheckFailed, exercise, expect, expect_close, expect_shape


def _build(cls, vocab_size, d_model, case):
    try:
        module = cls(vocab_size, d_model)
    except Exception as error:  # noqa: BLE001 - the learner's constructor
        raise CheckFailed(f"[{case}] ScaledEmbedding({vocab_size}, {d_model}) raised "
                          f"{type(error).__name__}: {error}") from None
    expect(isinstance(module, nn.Module), f"[{case}] ScaledEmbedding should be an nn.Module")
    weight = getattr(module, "weight", None)
    expect(isinstance(weight, nn.Parameter),
           f"[{case}] the table should be an nn.Parameter named `weight` (like nn.Embedding.weight)")
    expect_shape(case, weight, (vocab_size, d_model), name="weight")
    return module


@exercise("06.scaled-embedding", points=2, uses="ScaledEmbedding")
def check_forward(cls, rng):
    """Looked-up rows times √d_model, on random ids of any shape (weights copied to the reference)."""
    for case_no in range(5):
        vocab_size = int(torch.randint(5, 60, (1,), generator=rng))
        d_model = int(torch.randint(1, 9, (1,), generator=rng)) * 8
        lead = tuple(int(n) for n in torch.randint(1, 6, (int(torch.randint(1, 4, (1,), generator=rng)),),
                                                   generator=rng))
        case = f"case {case_no}: vocab_size={vocab_size}, d_model={d_model}, input_ids {lead}"
        module = _build(cls, vocab_size, d_model, case)
        reference = Reference(vocab_size, d_model)
        with torch.no_grad():
            module.weight.copy_(torch.randn(vocab_size, d_model, generator=rng) * d_model ** -0.5)
            reference.weight.copy_(module.weight)
        ids = torch.randint(0, vocab_size, lead, generator=rng)
        got = module(ids)
        expected = reference(ids)
        if isinstance(got, torch.Tensor) and got.shape == expected.shape and torch.allclose(
                got.detach(), expected / math.sqrt(d_model), atol=1e-6):
            raise CheckFailed(f"[{case}] your output equals the plain lookup: multiply it by "
                              f"√d_model = {math.sqrt(d_model):.3f}")
        expect_close(case, got, expected, atol=1e-5)
        expect(got.requires_grad, f"[{case}] the output does not depend on `weight` through autograd: "
                                  "look rows up with F.embedding / indexing, not a copy")


@exercise("06.scaled-embedding-init", points=1, uses="ScaledEmbedding")
def check_init(cls, rng):
    """The table starts N(0, 1/d_model), so the *scaled* output has entries of variance ≈ 1."""
    for d_model in (16, 256):
        vocab_size = 4000
        case = f"vocab_size={vocab_size}, d_model={d_model}"
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=rng)))
        module = _build(cls, vocab_size, d_model, case)
        std = module.weight.detach().std().item()
        expect(abs(std * math.sqrt(d_model) - 1) < 0.1,
               f"[{case}] weight std is {std:.4f}; initialise N(0, 1/d_model), std "
               f"{d_model ** -0.5:.4f}, so that √d_model · row has entries of variance 1")
        out_var = module(torch.arange(vocab_size)).detach().var().item()
        expect(abs(out_var - 1) < 0.1, f"[{case}] the scaled output has variance {out_var:.3f}, expected ≈ 1")
