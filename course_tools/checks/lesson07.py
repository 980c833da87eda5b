"""Graded checks for lesson 07: LayerNorm written by hand (function and module)."""
import torch
import torch.nn.functional as F
from torch import nn

from ..grading import CheckFailed, exercise, expect, expect_close, expect_shape

ATOL = 1e-4   # float32 outputs of unit scale: summation order alone stays far below this


def _variant(x, weight, bias, eps, unbiased=False, eps_outside=False, dims=None):
    """LayerNorm computed in one of the usual wrong ways, to recognise a learner's mistake."""
    dims = tuple(range(-weight.dim(), 0)) if dims is None else dims
    mean = x.mean(dim=dims, keepdim=True)
    var = x.var(dim=dims, keepdim=True, unbiased=unbiased)
    std = var.sqrt() + eps if eps_outside else torch.sqrt(var + eps)
    return (x - mean) / std * weight + bias


def _diagnose(got, x, weight, bias, eps) -> str:
    """A specific hint when the learner's output matches a known mistake, else ''."""
    def same(other):
        return torch.allclose(got, other, atol=ATOL, rtol=1e-4)
    n = weight.numel()
    if n > 1 and same(_variant(x, weight, bias, eps, unbiased=True)):
        return (" - your output matches the *unbiased* variance (divide by n - 1, torch.var's default). "
                "LayerNorm divides by n: use x.var(..., unbiased=False) or ((x - mean) ** 2).mean(...)")
    if same(_variant(x, weight, bias, 0.0)):
        return (" - your output matches the formula without eps: add eps to the variance, inside the "
                "square root")
    if same(_variant(x, weight, bias, eps, eps_outside=True)):
        return " - your output matches (x - mean) / (std + eps): eps belongs inside the square root"
    if x.dim() > weight.dim() and same(_variant(x, weight, bias, eps, dims=(0,))):
        return (" - your output matches statistics taken over the first (batch) dimension: that is "
                "BatchNorm. LayerNorm takes them over the last dimension(s)")
    if same(_variant(x, torch.ones_like(weight), torch.zeros_like(bias), eps)):
        return " - your output matches the normalisation without weight and bias: multiply by weight, add bias"
    return ""


def _compare(fn, x, weight, bias, eps, case):
    got = fn(x, weight, bias, eps)
    expected = F.layer_norm(x, tuple(weight.shape), weight, bias, eps)
    expect_shape(case, got, expected.shape)
    if torch.isfinite(expected).all() and not torch.isfinite(got).all():
        raise CheckFailed(f"[{case}] your result contains NaN or inf; a zero variance needs eps "
                          "inside the square root")
    if not torch.allclose(got.detach(), expected, atol=ATOL, rtol=1e-4):
        hint = _diagnose(got.detach(), x, weight, bias, eps)
        if hint:
            raise CheckFailed(f"[{case}] wrong values{hint}")
    expect_close(case, got, expected, atol=ATOL, rtol=1e-4)


def _random_last_dim_case(rng):
    lead = tuple(int(n) for n in torch.randint(1, 5, (int(torch.randint(1, 4, (1,), generator=rng)),),
                                               generator=rng))
    d = int(torch.randint(2, 33, (1,), generator=rng))
    scale = float(10 ** (torch.rand(1, generator=rng) * 2 - 1))          # 0.1 .. 10
    x = torch.randn(*lead, d, generator=rng) * scale + torch.randn(1, generator=rng) * 3
    weight = torch.randn(d, generator=rng)
    bias = torch.randn(d, generator=rng)
    return x, weight, bias



@exercise("07.layer-norm-last-dim", points=2, uses="layer_norm")
def check_last_dim(fn, rng):
    """LayerNorm over the last dimension on random shapes, scales and eps values."""
    # first the cases that tell the usual mistakes apart, so the feedback names the right one:
    # small variance with a large eps (no eps, eps inside and eps outside the root all differ)
    x = torch.randn(3, 4, generator=rng) * 0.05
    _compare(fn, x, torch.ones(4), torch.zeros(4), 0.01, "small variance 0.05², eps=0.01")
    # a constant row: zero variance, the output must be exactly the bias
    x = torch.full((2, 6), 3.0)
    _compare(fn, x, torch.randn(6, generator=rng), torch.randn(6, generator=rng), 1e-5,
             "constant rows (variance 0): output = bias")
    # d = 4: the unbiased variance is off by sqrt(4/3), unmistakably
    x = torch.randn(2, 3, 4, generator=rng)
    _compare(fn, x, torch.randn(4, generator=rng), torch.randn(4, generator=rng), 1e-5,
             "d=4 (biased vs unbiased variance)")
    for case in range(6):
        x, weight, bias = _random_last_dim_case(rng)
        eps = (1e-5, 1e-12, 0.1)[case % 3]
        _compare(fn, x, weight, bias, eps, f"x {tuple(x.shape)}, weight ({weight.shape[0]},), eps={eps:g}")
    # no statistic may cross the batch: a row's output must not depend on the other rows
    x = torch.randn(5, 8, generator=rng)
    weight, bias = torch.randn(8, generator=rng), torch.randn(8, generator=rng)
    alone = fn(x[:1], weight, bias, 1e-5)
    crowd = torch.cat([x[:1], 100 * torch.randn(4, 8, generator=rng)])
    expect_close("row 0 alone vs. with 4 other rows", fn(crowd, weight, bias, 1e-5)[:1], alone,
                 atol=1e-5, name="row 0's output in the larger batch")


@exercise("07.layer-norm-trailing-dims", points=1, uses="layer_norm")
def check_trailing_dims(fn, rng):
    """A 2-D weight: normalise over the last two dimensions together (like F.layer_norm)."""
    for case in range(4):
        B = int(torch.randint(1, 4, (1,), generator=rng))
        T, d = (int(n) for n in torch.randint(2, 9, (2,), generator=rng))
        x = torch.randn(B, T, d, generator=rng) * 2 + 1
        weight, bias = torch.randn(T, d, generator=rng), torch.randn(T, d, generator=rng)
        got = fn(x, weight, bias, 1e-5)
        expected = F.layer_norm(x, (T, d), weight, bias, 1e-5)
        expect_shape(f"x {tuple(x.shape)}, weight {(T, d)}", got, expected.shape)
        last_only = _variant(x, weight, bias, 1e-5, dims=(-1,))
        expect(not torch.allclose(got.detach(), last_only, atol=ATOL, rtol=1e-4),
               f"[x {tuple(x.shape)}, weight {(T, d)}] you normalised over the last dimension only; a "
               f"weight of shape {(T, d)} means the statistics cover the last {weight.dim()} dimensions "
               "together (use dims = tuple(range(-weight.dim(), 0)))")
        _compare(fn, x, weight, bias, 1e-5, f"x {tuple(x.shape)}, weight {(T, d)}")


@exercise("07.layer-norm-module", points=1, uses="LayerNorm")
def check_module(cls, rng):
    """The module: parameters weight (ones) and bias (zeros), nn.LayerNorm's state dict, gradients."""
    for normalized_shape in (7, (3, 5)):
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
        case = f"LayerNorm({normalized_shape!r})"
        module = cls(normalized_shape)
        expect(isinstance(module, nn.Module), f"[{case}] LayerNorm should be an nn.Module")
        params = dict(module.named_parameters())
        expect(set(params) == {"weight", "bias"},
               f"[{case}] expected exactly two parameters named 'weight' and 'bias' (nn.Parameter), "
               f"got {sorted(params)}; plain tensors are not trained and do not load from a state dict")
        expect_close(case, params["weight"], torch.ones(shape), atol=0, name="the initial weight")
        expect_close(case, params["bias"], torch.zeros(shape), atol=0, name="the initial bias")
        reference = nn.LayerNorm(normalized_shape, eps=1e-5)
        with torch.no_grad():
            reference.weight.copy_(torch.randn(shape, generator=rng))
            reference.bias.copy_(torch.randn(shape, generator=rng))
        module.load_state_dict(reference.state_dict())
        x = (torch.randn(4, *shape, generator=rng) * 3 + 2).requires_grad_()
        got = module(x)
        expected = reference(x)
        expect_close(case, got, expected, atol=ATOL, name="forward output")
        upstream = torch.randn(expected.shape, generator=rng)
        grads = torch.autograd.grad(got, (x, module.weight, module.bias), upstream)
        ref_grads = torch.autograd.grad(expected, (x, reference.weight, reference.bias), upstream)
        for name, g, r in zip(("dL/dx", "dL/dweight", "dL/dbias"), grads, ref_grads):
            expect_close(case, g, r, atol=1e-3, name=name)
    eps_module = cls(6, eps=0.5)
    x = torch.randn(3, 6, generator=rng) * 0.3
    expect_close("LayerNorm(6, eps=0.5)", eps_module(x), F.layer_norm(x, (6,), eps=0.5), atol=ATOL,
                 name="output (is eps passed on?)")
