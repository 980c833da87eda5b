"""Graded checks for lesson 10: GELU's derivative in closed form, and a gated (SwiGLU) feed-forward block.
The references are written here: autograd through the exact GELU formula, and SwiGLU from its definition."""
import math

import torch
from torch import nn

from ..grading import CheckFailed, exercise, expect, expect_close, expect_tensor, randint

_AUTOGRAD = ("torch.autograd:grad", "torch:Tensor.backward", "torch.autograd:backward", "torch.func:grad",
             "torch.func:vjp", "torch.func:jacrev", "torch.func:jacfwd", "torch.func:vmap",
             "torch.autograd.functional:jacobian", "torch.autograd.functional:vjp",
             "torch.autograd.functional:jvp", "torch.func:grad_and_value")
_SWIGLU = ("course_lib.feedforward:FeedForward", "torch.nn.functional:glu", "torch.nn:GLU")


def gelu_grad_reference(x):
    """Autograd's derivative of 0.5·x·(1 + erf(x/√2)), computed in float64."""
    with torch.enable_grad():
        z = x.detach().double().requires_grad_(True)
        y = 0.5 * z * (1.0 + torch.erf(z / math.sqrt(2.0)))
        (grad,) = torch.autograd.grad(y.sum(), z)
    return grad.to(x.dtype)


@exercise("10.gelu-grad", points=1, uses="gelu_grad", forbids=_AUTOGRAD)
def check_gelu_grad(fn, rng):
    """GELU'(x) = Phi(x) + x phi(x) in closed form, on random shapes, float32/float64, large |x|."""
    cases = [("worked example x = [-1, 0, 1]", torch.tensor([-1.0, 0.0, 1.0])),
             ("x = 0 (the slope there is 1/2)", torch.zeros(3, dtype=torch.float64)),
             ("x = linspace(-4, 4, 161), float64 (did you use exp(-x^2/2) / sqrt(2 pi) for phi, erf(x / sqrt 2) "
              "for Phi, and the term x * phi(x) of the product rule?)", torch.linspace(-4, 4, 161, dtype=torch.float64))]
    cases += [(f"x of shape {shape}, float32", torch.randn(shape, generator=rng) * 3)
              for shape in [(), (7,), (2, 5), (3, 4, randint(rng, 1, 9))]]
    cases.append(("float64 x of shape (4, 6)", torch.randn(4, 6, generator=rng, dtype=torch.float64) * 2))
    cases.append(("large magnitudes |x| up to 50 (no NaN: the slope is 0 far left, 1 far right)",
                  torch.tensor([-50.0, -30.0, -12.0, 12.0, 30.0, 50.0], dtype=torch.float64)))
    cases.append(("empty x of shape (0, 3)", torch.zeros(0, 3)))
    for case, x in cases:
        got = expect_tensor(case, fn(x.clone()))
        expect(got.dtype == x.dtype, f"[{case}] returned dtype {got.dtype}, expected {x.dtype} (keep the input's dtype)")
        atol = 1e-10 if x.dtype == torch.float64 else 1e-5
        expect_close(case, got, gelu_grad_reference(x), atol=atol, rtol=1e-6)


def _swiglu(x, w_gate, w_up, w_down, kind="swiglu"):
    g, u = x @ w_gate.T, x @ w_up.T
    if kind == "swiglu":
        h = g * torch.sigmoid(g) * u
    elif kind == "silu-on-up":
        h = u * torch.sigmoid(u) * g
    elif kind == "no-gate":
        h = g * torch.sigmoid(g)
    elif kind == "geglu":
        h = 0.5 * g * (1.0 + torch.erf(g / math.sqrt(2.0))) * u
    elif kind == "sigmoid-gate":
        h = torch.sigmoid(g) * u
    elif kind == "silu-both":
        h = g * torch.sigmoid(g) * u * torch.sigmoid(u)
    return h @ w_down.T


_DIAGNOSIS = {"silu-on-up": "the SiLU is on the w_up branch: it goes on w_gate's output",
              "no-gate": "no gate: the SiLU of w_gate's output must be multiplied by w_up's output",
              "geglu": "that is GEGLU (GELU on the gate): SwiGLU uses SiLU(z) = z * sigmoid(z)",
              "sigmoid-gate": "a plain sigmoid gate (the original GLU): SwiGLU uses SiLU(z) = z * sigmoid(z)",
              "silu-both": "the SiLU goes on the gate branch only, not on both"}


def _build(cls, d_model, d_ff, rng, case, dtype=torch.float32):
    mine = cls(d_model, d_ff)
    expect(isinstance(mine, nn.Module), f"[{case}] SwiGLUFeedForward should subclass nn.Module")
    weights = {}
    for name, shape in (("w_gate", (d_ff, d_model)), ("w_up", (d_ff, d_model)), ("w_down", (d_model, d_ff))):
        layer = getattr(mine, name, None)
        expect(isinstance(layer, nn.Linear), f"[{case}] expected a member `{name}` that is an nn.Linear")
        expect(tuple(layer.weight.shape) == shape,
               f"[{case}] {name}.weight has shape {tuple(layer.weight.shape)}, expected {shape} "
               "(nn.Linear(in, out) stores weight as (out, in))")
        expect(layer.bias is None, f"[{case}] {name} has a bias: SwiGLU's projections have none (bias=False)")
        weights[name] = torch.randn(shape, generator=rng, dtype=torch.float64) / shape[1] ** 0.5
    names = sorted(n for n, _ in mine.named_parameters())
    expect(names == ["w_down.weight", "w_gate.weight", "w_up.weight"],
           f"[{case}] parameters {names}: expected exactly w_gate.weight, w_up.weight, w_down.weight")
    mine = mine.to(dtype)
    with torch.no_grad():
        for name, w in weights.items():
            getattr(mine, name).weight.copy_(w)
    return mine.eval(), weights


def _compare(case, got, x, weights, dtype):
    expected = _swiglu(x.double(), **weights).to(dtype)
    got = expect_tensor(case, got)
    tol = 1e-10 if dtype == torch.float64 else 2e-5
    if got.shape == expected.shape and not torch.allclose(got.detach().to(dtype), expected, atol=tol, rtol=1e-4):
        for kind, hint in _DIAGNOSIS.items():
            wrong = _swiglu(x.double(), **weights, kind=kind).to(dtype)
            if torch.allclose(got.detach().to(dtype), wrong, atol=tol, rtol=1e-4):
                raise CheckFailed(f"[{case}] your output differs from the reference and matches a known mistake: {hint}")
    expect_close(case, got, expected, atol=tol, rtol=1e-4)


@exercise("10.swiglu", points=2, uses="SwiGLUFeedForward", forbids=_SWIGLU)
def check_swiglu(cls, rng):
    """SwiGLU feed-forward block: LLaMA's hidden size, then copied weights, any leading dims, float32/float64."""
    sizes = [(10, 8), (768, 256), (7, 1), (5, 4), (3, 1)] + [(randint(rng, 1, 64), [1, 2, 8, 32][randint(rng, 0, 4)])
                                                               for _ in range(3)]
    for d_model, multiple_of in sizes:
        case = f"hidden size for d_ff=None: d_model={d_model}, multiple_of={multiple_of}"
        expected = multiple_of * math.ceil(int(2 * 4 * d_model / 3) / multiple_of)
        layer = getattr(cls(d_model, None, multiple_of), "w_gate", None)
        expect(isinstance(layer, nn.Linear), f"[{case}] expected a member `w_gate` that is an nn.Linear")
        got = layer.weight.shape[0]
        expect(got == expected, f"[{case}] d_ff is {got}, expected {expected} = int(2 * 4 * d_model / 3) "
                                f"= {int(2 * 4 * d_model / 3)} rounded up to a multiple of {multiple_of}")
    case = "worked example: d_model = d_ff = 1, x = 2, w_gate = w_down = 1, w_up = 0.5"
    mine, _ = _build(cls, 1, 1, rng, case)
    with torch.no_grad():
        mine.w_gate.weight.fill_(1.0), mine.w_up.weight.fill_(0.5), mine.w_down.weight.fill_(1.0)
        weights = {"w_gate": torch.ones(1, 1, dtype=torch.float64), "w_up": torch.full((1, 1), 0.5, dtype=torch.float64),
                   "w_down": torch.ones(1, 1, dtype=torch.float64)}
        x = torch.tensor([[2.0], [-1.0], [0.5]])
        _compare(case, mine(x), x, weights, torch.float32)
    for n in range(5):
        d_model, d_ff = randint(rng, 1, 10), randint(rng, 1, 33)
        leading = [(3,), (2, 3), (2, 3, 4), (1,), (5, 1)][n]
        dtype = torch.float64 if n in (2, 4) else torch.float32
        case = f"case {n}: d_model={d_model}, d_ff={d_ff}, x {leading + (d_model,)}, {dtype}"
        mine, weights = _build(cls, d_model, d_ff, rng, case, dtype)
        x = torch.randn(*leading, d_model, generator=rng, dtype=dtype) * 2
        with torch.no_grad():
            _compare(case, mine(x), x, weights, dtype)
    case = "position-wise: token 2 alone must give the same output as token 2 in its sequence"
    mine, _ = _build(cls, 8, 16, rng, case)
    x = torch.randn(3, 6, 8, generator=rng)
    with torch.no_grad():
        expect_close(case, mine(x[:, 2]), mine(x)[:, 2], atol=1e-5)
