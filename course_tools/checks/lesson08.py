"""Graded checks for lesson 08: the residual wrapper Residual(sublayer, norm=None)."""
import torch
from torch import nn

from ..grading import CheckFailed, exercise, expect, expect_close
from course_lib.residual import Residual as Reference


def _randomize(module, rng, scale=0.5):
    """Overwrite every parameter with rng-drawn values (hidden cases, independent of torch's seed)."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(scale * torch.randn(p.shape, generator=rng))
    return module


def _random_sublayer(rng, d, kind):
    hidden = int(torch.randint(2, 12, (1,), generator=rng))
    if kind == "linear":
        sub = nn.Linear(d, d)
    elif kind == "mlp":
        sub = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))
    elif kind == "tanh-linear":
        sub = nn.Sequential(nn.Tanh(), nn.Linear(d, d, bias=False))
    else:
        raise ValueError(kind)
    return _randomize(sub, rng)


def _random_x(rng, d):
    lead = tuple(int(n) for n in torch.randint(1, 5, (int(torch.randint(1, 4, (1,), generator=rng)),),
                                               generator=rng))
    return torch.randn(*lead, d, generator=rng)


def _build(cls, case, *args):
    module = cls(*args)
    if not isinstance(module, nn.Module):
        raise CheckFailed(f"[{case}] Residual(...) should be an nn.Module, got {type(module).__name__}")
    return module


def _expect_owns(case, module, *parts):
    owned = {id(p) for p in module.parameters()}
    for part_name, part in parts:
        if not all(id(p) in owned for p in part.parameters()):
            raise CheckFailed(f"[{case}] the {part_name}'s parameters are not among Residual(...).parameters(): "
                              f"store it as an attribute of the module (self.{part_name} = {part_name}) so an "
                              "optimizer trains it")


def _compare(case, module, reference, x, rng, wrong_guesses=()):
    """Forward value and the gradient that reaches x, against the reference module."""
    upstream = torch.randn(x.shape, generator=rng)
    x_ours = x.clone().requires_grad_()
    got = module(x_ours)
    x_ref = x.clone().requires_grad_()
    expected = reference(x_ref)
    if isinstance(got, torch.Tensor) and got.shape == expected.shape and not torch.allclose(
            got.detach(), expected.detach(), atol=1e-5, rtol=1e-5):
        for guess, hint in wrong_guesses:  # name a common mistake when the answer matches it
            if torch.allclose(got.detach(), guess, atol=1e-5, rtol=1e-5):
                raise CheckFailed(f"[{case}] {hint}")
    expect_close(case, got, expected.detach(), atol=1e-5, name="output")
    (got * upstream).sum().backward()
    (expected * upstream).sum().backward()
    expect(x_ours.grad is not None, f"[{case}] no gradient reached x: is the identity path detached?")
    expect_close(case, x_ours.grad, x_ref.grad, atol=1e-5, name="gradient with respect to x")


@exercise("08.residual-identity", points=2, uses="Residual")
def check_identity(cls, rng):
    """x + sublayer(x) on random sublayers and shapes, with the gradient reaching x."""
    for i, kind in enumerate(("linear", "mlp", "tanh-linear", "mlp", "linear")):
        d = int(torch.randint(2, 17, (1,), generator=rng))
        sub = _random_sublayer(rng, d, kind)
        x = _random_x(rng, d)
        case = f"case {i}: {kind} sublayer, x {tuple(x.shape)}, no norm"
        module = _build(cls, case, sub)
        _expect_owns(case, module, ("sublayer", sub))
        with torch.no_grad():
            branch = sub(x)
        _compare(case, module, Reference(sub), x, rng, wrong_guesses=(
            (branch, "your output equals sublayer(x): the residual adds x back (x + sublayer(x))"),))
    d = 8
    zero = nn.Linear(d, d)
    nn.init.zeros_(zero.weight)
    nn.init.zeros_(zero.bias)
    x = _random_x(rng, d)
    case = "a sublayer that outputs zeros: the block must be exactly the identity"
    expect_close(case, _build(cls, case, zero)(x), x, atol=0, rtol=0, name="output")


@exercise("08.residual-prenorm", points=2, uses="Residual")
def check_prenorm(cls, rng):
    """x + sublayer(norm(x)) (Pre-LN): the norm sits on the branch, the identity path carries x."""
    for i, kind in enumerate(("linear", "mlp", "tanh-linear", "mlp")):
        d = int(torch.randint(2, 17, (1,), generator=rng))
        sub = _random_sublayer(rng, d, kind)
        norm = _randomize(nn.LayerNorm(d), rng, scale=1.0)
        x = 2.0 * _random_x(rng, d) + 1.0        # far from normalised, so skipping the norm shows
        case = f"case {i}: {kind} sublayer, LayerNorm({d}), x {tuple(x.shape)}"
        module = _build(cls, case, sub, norm)
        _expect_owns(case, module, ("sublayer", sub), ("norm", norm))
        with torch.no_grad():
            n = norm(x)
            guesses = (
                (n + sub(n), "the identity path must carry x itself, not norm(x): x + sublayer(norm(x))"),
                (norm(x + sub(x)), "that is Post-LN, norm(x + sublayer(x)); this wrapper is Pre-LN: "
                                   "x + sublayer(norm(x))"),
                (x + sub(x), "the norm was not applied: with a norm the block is x + sublayer(norm(x))"),
            )
        _compare(case, module, Reference(sub, norm), x, rng, wrong_guesses=guesses)
    d = 6
    sub = _random_sublayer(rng, d, "linear")
    x = _random_x(rng, d)
    case = "norm=None after a normed case: no norm means x + sublayer(x)"
    _compare(case, _build(cls, case, sub, None), Reference(sub), x, rng)


@exercise("08.residual-shape", points=1, uses="Residual")
def check_shape(cls, rng):
    """A sublayer that changes the shape raises ValueError instead of broadcasting."""
    d = int(torch.randint(3, 12, (1,), generator=rng))
    x = _random_x(rng, d)
    for out_features, why in ((d + 2, "a wider output"), (1, "an output of width 1, which would broadcast")):
        sub = _randomize(nn.Linear(d, out_features), rng)
        case = f"sublayer Linear({d}, {out_features}) on x {tuple(x.shape)}: {why}"
        module = _build(cls, case, sub)
        try:
            out = module(x)
        except ValueError:
            continue
        except RuntimeError as error:
            raise CheckFailed(f"[{case}] PyTorch raised RuntimeError ({error}); check the shapes yourself "
                              "and raise a ValueError that names them") from None
        raise CheckFailed(f"[{case}] expected a ValueError, but forward returned shape "
                          f"{tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__}")
    sub = _random_sublayer(rng, d, "mlp")
    case = f"a shape-preserving sublayer on x {tuple(x.shape)} must not raise"
    _compare(case, _build(cls, case, sub), Reference(sub), x, rng)
