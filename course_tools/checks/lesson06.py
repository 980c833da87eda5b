"""Graded checks for lesson 06: a token + position embedding that scales the token rows by √d_model,
adds the sinusoidal table from a start offset, and leaves padding tokens out (no vector, no gradient)."""
import math

import torch
from torch import nn

from ..grading import CheckFailed, call_learner, exercise, expect, expect_close, expect_value_error, randint


def _table(max_len, d):
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    angle = pos / 10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.zeros(max_len, d, dtype=torch.float64)
    pe[:, 0::2] = angle.sin()
    pe[:, 1::2] = angle.cos()[:, : d // 2]
    return pe.float()


def _reference(weight, ids, start, padding_idx):
    d = weight.shape[1]
    tokens = weight[ids] * math.sqrt(d) * (ids != padding_idx)[..., None]
    return tokens + _table(start + ids.shape[-1], d)[start:]




def _build(cls, case, vocab, d, max_len, padding_idx, rng=None):
    module = call_learner(case, cls, vocab, d, max_len, padding_idx)
    expect(isinstance(module, nn.Module), f"[{case}] TokenAndPositionEmbedding(...) should be an nn.Module")
    weight = getattr(module, "weight", None)
    expect(isinstance(weight, nn.Parameter) and tuple(weight.shape) == (vocab, d),
           f"[{case}] the token table should be an nn.Parameter `weight` of shape ({vocab}, {d}), got "
           f"{tuple(weight.shape) if isinstance(weight, torch.Tensor) else type(weight).__name__}")
    if rng is not None:   # hidden weights, every row (the padding row too) non-zero
        with torch.no_grad():
            weight.copy_(torch.randn(vocab, d, generator=rng) * d ** -0.5)
    return module


def _sizes(rng):
    vocab = randint(rng, 5, 40)
    d = 2 * randint(rng, 1, 9)
    B, T = (int(n) for n in torch.randint(1, 6, (2,), generator=rng))
    start = randint(rng, 0, 20)
    padding_idx = randint(rng, 0, vocab)
    return vocab, d, B, T, start, padding_idx


def _ids(rng, vocab, B, T, padding_idx, with_padding):
    ids = torch.randint(0, vocab, (B, T), generator=rng)
    ids[ids == padding_idx] = (padding_idx + 1) % vocab
    if with_padding:
        ids[:, -1] = padding_idx                 # right padding, and a few pads inside
        ids[torch.rand(B, T, generator=rng) < 0.2] = padding_idx
    return ids


@exercise("06.embed-forward", points=2, uses="TokenAndPositionEmbedding")
def check_forward(cls, rng):
    """weight[ids] · √d_model + PE[start : start + T], on random sizes and start offsets (no padding tokens)."""
    vocab, d = 30, 16
    module = _build(cls, "vocab 30, d_model 16", vocab, d, 64, 0, rng)
    weight = module.weight.detach().clone()
    ids = _ids(rng, vocab, 2, 5, 0, False)
    case = "vocab 30, d_model 16, ids (2, 5), start=0"
    got = call_learner(case, module, ids)
    if isinstance(got, torch.Tensor) and got.shape == (2, 5, d):
        pe = _table(5, d)
        for guess, hint in ((weight[ids] + pe, "the token rows are not multiplied by √d_model = 4"),
                            ((weight[ids] + pe) * 4, "only the token rows are scaled by √d_model, not the sum"),
                            (weight[ids] * 4, "the position vectors are missing")):
            if torch.allclose(got.detach(), guess, atol=1e-5):
                raise CheckFailed(f"[{case}] {hint}")
    expect_close(case, got, _reference(weight, ids, 0, 0), atol=1e-5)
    for i in range(5):
        vocab, d, B, T, start, padding_idx = _sizes(rng)
        case = f"case {i}: vocab {vocab}, d_model {d}, ids ({B}, {T}), start={start}"
        module = _build(cls, case, vocab, d, 64, padding_idx, rng)
        ids = _ids(rng, vocab, B, T, padding_idx, False)
        got = call_learner(case, module, ids, start=start)
        expect_close(case, got, _reference(module.weight.detach(), ids, start, padding_idx), atol=1e-5)
        expect(got.requires_grad, f"[{case}] the output does not depend on `weight` through autograd")


@exercise("06.embed-padding", points=2, uses="TokenAndPositionEmbedding")
def check_padding(cls, rng):
    """Padding tokens: the position vector alone, and no gradient reaches the table's padding row."""
    for i in range(4):
        vocab, d, B, T, start, padding_idx = _sizes(rng)
        T = max(T, 2)
        case = (f"case {i}: vocab {vocab}, padding_idx={padding_idx}, ids ({B}, {T}) with padding, start={start} "
                "(the padding row of `weight` holds non-zero values)")
        module = _build(cls, case, vocab, d, 64, padding_idx, rng)
        weight = module.weight.detach().clone()
        ids = _ids(rng, vocab, B, T, padding_idx, True)
        got = call_learner(case, module, ids, start=start)
        expect_close(case, got, _reference(weight, ids, start, padding_idx), atol=1e-5,
                     name="output (a padding token gets the position vector only)")
        upstream = torch.randn(got.shape, generator=rng)
        module.zero_grad()
        (got * upstream).sum().backward()
        grad = module.weight.grad
        expect(grad is not None, f"[{case}] no gradient reached `weight`")
        leak = grad[padding_idx].abs().max().item()
        expect(leak == 0, f"[{case}] the padding row of `weight` received a gradient (max |grad| {leak:.3g}); "
                          "expected exactly 0: padding tokens must not train the table")
        w = weight.clone().requires_grad_()
        (_reference(w, ids, start, padding_idx) * upstream).sum().backward()
        expect_close(case, grad, w.grad, atol=1e-4, name="gradient of `weight`")


@exercise("06.embed-setup", points=1, uses="TokenAndPositionEmbedding")
def check_setup(cls, rng):
    """Initialisation N(0, 1/d_model) with a zero padding row, a fixed (untrained) position table, max_len."""
    torch.manual_seed(randint(rng, 0, 2**31 - 1))
    vocab, d, padding_idx = 3000, 64, 7
    case = f"TokenAndPositionEmbedding({vocab}, {d}, max_len=32, padding_idx={padding_idx})"
    module = _build(cls, case, vocab, d, 32, padding_idx)
    weight = module.weight.detach()
    std = weight.std().item()
    expect(abs(std * math.sqrt(d) - 1) < 0.1, f"[{case}] weight std is {std:.4f}; initialise N(0, 1/d_model), "
                                              f"std {d ** -0.5:.4f}")
    expect(weight[padding_idx].abs().max().item() == 0, f"[{case}] the padding row should start at zero")
    n_params = sum(p.numel() for p in module.parameters())
    expect(n_params == vocab * d, f"[{case}] the module has {n_params:,} trainable numbers, expected {vocab * d:,} "
                                  "(the table only): keep the sinusoidal table as a buffer, not a Parameter")
    ids = torch.ones(1, 4, dtype=torch.long)
    expect_value_error("max_len=32, start=30, 4 tokens: positions 30..33 do not exist",
                       lambda: module(ids, start=30))
