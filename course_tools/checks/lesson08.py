"""Graded checks for lesson 08: a residual block with a learnable gate on the branch, x + g · sublayer(x):
ReZero (one scalar g starting at 0) and LayerScale (one g per channel)."""
import torch
from torch import nn

from ..grading import CheckFailed, call_learner, exercise, expect, expect_close, randint




def _randomize(module, rng, scale=0.5):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(scale * torch.randn(p.shape, generator=rng))
    return module


def _sublayer(rng, d, kind):
    hidden = randint(rng, 2, 10)
    sub = {"linear": lambda: nn.Linear(d, d),
           "mlp": lambda: nn.Sequential(nn.Linear(d, hidden), nn.Tanh(), nn.Linear(hidden, d))}[kind]()
    return _randomize(sub, rng)


def _x(rng, d):
    lead = tuple(int(n) for n in torch.randint(1, 5, (randint(rng, 1, 4),), generator=rng))
    return torch.randn(*lead, d, generator=rng)


def _gate(case, module, shape):
    gate = getattr(module, "gate", None)
    expect(isinstance(gate, nn.Parameter), f"[{case}] the gate should be an nn.Parameter named `gate` (so that it "
                                           f"is trained), got {type(gate).__name__}")
    expect(tuple(gate.shape) == shape, f"[{case}] `gate` should have shape {shape}, got {tuple(gate.shape)}")
    owned = {id(p) for p in module.parameters()}
    expect(id(gate) in owned, f"[{case}] `gate` is not among the module's parameters")
    return gate


def _compare(case, module, sub, gate_value, x, rng):
    """Output and the gradients reaching x, the gate and the sublayer's parameters."""
    upstream = torch.randn(x.shape, generator=rng)
    x_ours = x.clone().requires_grad_()
    got = call_learner(case, module, x_ours)
    g = gate_value.clone().requires_grad_()
    x_ref = x.clone().requires_grad_()
    sub.zero_grad()
    expected = x_ref + g * sub(x_ref)
    (expected * upstream).sum().backward()
    sub_grads = [p.grad.clone() for p in sub.parameters()]
    if isinstance(got, torch.Tensor) and got.shape == expected.shape and not torch.allclose(got.detach(), expected.detach(), atol=1e-5):
        with torch.no_grad():
            for guess, hint in ((g * (x + sub(x)), "the gate scales the whole sum: it belongs on the branch only, "
                                                   "x + gate · sublayer(x)"),
                                (x + sub(g * x), "the gate scales the sublayer's input: it scales its output"),
                                (x + sub(x), "the gate is not applied")):
                if torch.allclose(got.detach(), guess, atol=1e-5):
                    raise CheckFailed(f"[{case}] {hint}")
    expect_close(case, got, expected.detach(), atol=1e-5, name="output")
    sub.zero_grad()
    module.zero_grad()
    (got * upstream).sum().backward()
    expect(x_ours.grad is not None, f"[{case}] no gradient reached x")
    expect_close(case, x_ours.grad, x_ref.grad, atol=1e-5, name="gradient with respect to x")
    gate_grad = module.gate.grad
    expect(gate_grad is not None, f"[{case}] no gradient reached `gate`: is it detached, or not a Parameter?")
    expect_close(case, gate_grad, g.grad, atol=1e-4, name="gradient of `gate`")
    for (name, p), expected_grad in zip(sub.named_parameters(), sub_grads):
        expect(p.grad is not None, f"[{case}] no gradient reached the sublayer's {name}")
        expect_close(case, p.grad, expected_grad, atol=1e-4, name=f"gradient of the sublayer's {name}")


@exercise("08.rezero", points=2, uses="GatedResidual")
def check_rezero(cls, rng):
    """One scalar gate: x + gate · sublayer(x), with gradients to x, the gate and the sublayer."""
    for i, kind in enumerate(("linear", "mlp", "mlp", "linear")):
        d = randint(rng, 2, 12)
        sub = _sublayer(rng, d, kind)
        x = _x(rng, d) * 2 + 1
        case = f"case {i}: {kind} sublayer, x {tuple(x.shape)}, the gate set to a random value"
        module = call_learner(case, cls, sub)
        gate = _gate(case, module, ())
        value = torch.randn((), generator=rng) + 1.5
        with torch.no_grad():
            gate.copy_(value)
        _compare(case, module, sub, value, x, rng)


@exercise("08.rezero-init", points=1, uses="GatedResidual")
def check_rezero_init(cls, rng):
    """At initialisation (gate 0) the block is exactly the identity, yet the gate's gradient is not zero."""
    d = randint(rng, 3, 10)
    sub = _sublayer(rng, d, "mlp")
    x = _x(rng, d)
    case = f"GatedResidual(mlp) just built, x {tuple(x.shape)}"
    module = call_learner(case, cls, sub)
    gate = _gate(case, module, ())
    expect(float(gate.detach()) == 0.0, f"[{case}] ReZero's gate starts at 0, got {float(gate.detach())}")
    out = call_learner(case, module, x)
    expect_close(case, out, x, atol=0, rtol=0, name="output at initialisation (exactly x)")
    _compare(case + " (the gate's gradient is sum(upstream · sublayer(x)); the sublayer's is 0)",
             module, sub, torch.zeros(()), x, rng)
    case = "GatedResidual(sublayer, init=0.5)"
    module = call_learner(case, cls, _sublayer(rng, d, "linear"), init=0.5)
    expect(float(_gate(case, module, ()).detach()) == 0.5, f"[{case}] the gate should start at `init` = 0.5")


@exercise("08.layerscale", points=2, uses="GatedResidual")
def check_layerscale(cls, rng):
    """d given: one gate per channel, shape (d,), starting at `init`; gradients summed over the leading dims."""
    for i, kind in enumerate(("linear", "mlp", "mlp")):
        d = randint(rng, 2, 12)
        sub = _sublayer(rng, d, kind)
        x = _x(rng, d)
        init = float(torch.rand((), generator=rng)) * 0.1 + 1e-4
        case = f"case {i}: GatedResidual({kind}, d={d}, init={init:.4g}), x {tuple(x.shape)}"
        module = call_learner(case, cls, sub, d=d, init=init)
        gate = _gate(case, module, (d,))
        expect_close(case, gate.detach(), torch.full((d,), init), atol=1e-7, name="the gate at initialisation")
        value = torch.randn(d, generator=rng)
        with torch.no_grad():
            gate.copy_(value)
        _compare(case + ", the gates set to random values", module, sub, value, x, rng)
