"""Graded checks for lesson 08 (what do residual connections buy us?).

- 08.gradients (predict, then measure): the learner measures the gradient norm reaching each block of a
  stack, with and without the identity path, on hidden stacks (depths, widths, branch kinds) against a
  reference written here; the note shows the measurement on the exercise's 24-block stack beside the
  learner's prediction.
- 08.prediction: that prediction, a derivation (the per-block variance factor of a new branch).
- 08.gate (apply): ReZero's gated residual, checked by its properties so that a gate of any shape that
  broadcasts over x passes (the paper's own code uses shape (1,)).
- 08.written: the interview answer, graded by a person.
"""
import math
import numbers

import torch
from torch import nn

from ..grader.authoring import CheckFailed, call_learner, exercise, expect, randint, written

# ---------------------------------------------------------------- stacks with and without the identity path

# The exercise's stack: 24 blocks, as many residual sub-layers as BERT-base (12 layers x 2). (At 32 blocks the
# plain stack's first gradients reach 1e-20, whose squares fall below float32's normal range.)
DEPTH = 24


def _uniform(shape, bound, rng):
    return (2 * torch.rand(shape, generator=rng) - 1) * bound


def _init_default(module, rng):
    """PyTorch's default nn.Linear initialisation, U(±1/√fan_in) for weight and bias, drawn from `rng`
    (so that a seed gives the same case); LayerNorm's gain and bias drawn near 1 and 0."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear):
                bound = 1 / math.sqrt(m.in_features)
                m.weight.copy_(_uniform(m.weight.shape, bound, rng))
                if m.bias is not None:
                    m.bias.copy_(_uniform(m.bias.shape, bound, rng))
            elif isinstance(m, nn.LayerNorm):
                m.weight.copy_(1 + 0.2 * torch.randn(m.weight.shape, generator=rng))
                m.bias.copy_(0.2 * torch.randn(m.bias.shape, generator=rng))
    return module


def _branch(kind, d, rng):
    hidden = randint(rng, 2, 3 * d + 2)
    make = {"ffn": lambda: nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d)),
            "linear": lambda: nn.Linear(d, d),
            "tanh mlp": lambda: nn.Sequential(nn.Linear(d, hidden), nn.Tanh(), nn.Linear(hidden, d, bias=False)),
            "pre-LN": lambda: nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))}[kind]
    return _init_default(make(), rng)


def exercise_stack(depth, width, seed):
    """The exercise's stack (the set-up cell's `make_branches`): FFN branches d -> 4d -> d with ReLU,
    PyTorch's default initialisation from `seed`."""
    torch.manual_seed(seed)
    return nn.ModuleList(nn.Sequential(nn.Linear(width, 4 * width), nn.ReLU(), nn.Linear(4 * width, width))
                         for _ in range(depth))


def _forward(branches, x, residual):
    h, inputs = x, []
    for branch in branches:
        inputs.append(h)
        h = h + branch(h) if residual else branch(h)
    return h, inputs


def _per_block(branches, grads, combine):
    out, i = [], 0
    for branch in branches:
        n = len(list(branch.parameters()))
        out.append(combine(grads[i:i + n], list(branch.parameters())))
        i += n
    return out


def reference(branches, x, upstream, residual):
    """‖∂L/∂θ_l‖ over all of block l's parameters, L = Σ h_L ⊙ upstream, first block first (float64)."""
    params = list(branches.parameters())
    with torch.enable_grad():
        h, _ = _forward(branches, x, residual)
        grads = torch.autograd.grad((h * upstream).sum(), params)
    return _per_block(branches, grads, lambda gs, ps: math.sqrt(sum(float(g.double().pow(2).sum()) for g in gs)))


def _variants(branches, x, upstream, residual, earlier):
    """Known wrong measurements of one case: name -> (values, diagnosis)."""
    params = list(branches.parameters())
    out = {}
    with torch.enable_grad():
        other = reference(branches, x, upstream, not residual)
        out["other mode"] = (other, "these are the gradients of the stack " + (
            "without the identity path (h = F(h)): with residual=True each block adds its branch to its input"
            if residual else "with the identity path (h + F(h)): with residual=False a block is its branch alone, h = F(h)"))
        ref = reference(branches, x, upstream, residual)
        out["reversed"] = (ref[::-1], "the same norms in reverse order: return the first block (nearest the input) first")
        out["squared"] = ([v * v for v in ref], "these are squared norms: take the square root")
        h, _ = _forward(branches, x, residual)
        grads = torch.autograd.grad(h.sum(), params)
        out["no upstream"] = (_per_block(branches, grads, lambda gs, ps: math.sqrt(sum(float(g.pow(2).sum()) for g in gs))),
                              "this is the gradient of h_L.sum(): the loss is L = (h_L * upstream).sum()")
        h, _ = _forward(branches, x, residual)
        grads = torch.autograd.grad((h * upstream).sum(), params)
        out["weights only"] = (_per_block(branches, grads, lambda gs, ps: math.sqrt(sum(
            float(g.pow(2).sum()) for g, p in zip(gs, ps) if p.dim() >= 2))),
            "the norm counts the weight matrices only: take every parameter of the block (biases and norms too)")
        xs = x.clone().requires_grad_(True)
        h, inputs = _forward(branches, xs, residual)
        acts = torch.autograd.grad((h * upstream).sum(), inputs + [h])
        norms = [float(a.norm()) for a in acts]
        why = "these are the norms of ∂L/∂h (the activations), not of each block's parameter gradient"
        out["activations in"] = (norms[:-1], why)
        out["activations out"] = (norms[1:], why)
        if earlier is not None:   # this stack was measured just before, in the other mode
            h, _ = _forward(branches, x, not residual)
            g1 = torch.autograd.grad((h * upstream).sum(), params)
            h, _ = _forward(branches, x, residual)
            g2 = torch.autograd.grad((h * upstream).sum(), params)
            total = _per_block(branches, [a + b for a, b in zip(g1, g2)],
                               lambda gs, ps: math.sqrt(sum(float(g.pow(2).sum()) for g in gs)))
            out["accumulated"] = (total, "the gradients of an earlier call were still in .grad and this call added to "
                                         "them: zero them first (module.zero_grad()) or use torch.autograd.grad")
    return out


def _as_values(case, got, depth):
    if isinstance(got, torch.Tensor):
        if got.dim() != 1:
            raise CheckFailed(f"[{case}] return one norm per block, a 1-D tensor or a list, got shape {tuple(got.shape)}")
        got = got.detach().tolist()
    if not isinstance(got, (list, tuple)) or not all(
            isinstance(v, numbers.Real) or (isinstance(v, torch.Tensor) and v.numel() == 1) for v in got):
        raise CheckFailed(f"[{case}] return one norm per block (a list of floats or a 1-D tensor), "
                          f"got {got.__class__.__name__}")
    got = [float(v) for v in got]
    if len(got) != depth:
        raise CheckFailed(f"[{case}] got {len(got)} norms for a stack of {depth} blocks: one per block")
    return got


def _close(got, expected, rtol=1e-4):
    return len(got) == len(expected) and all(
        abs(a - b) <= rtol * abs(b) + 1e-30 or (math.isnan(a) and math.isnan(b)) for a, b in zip(got, expected))


def _compare(case, got, branches, x, upstream, residual, earlier):
    expected = reference(branches, x, upstream, residual)
    if _close(got, expected):
        return expected
    for values, why in _variants(branches, x, upstream, residual, earlier).values():
        if _close(got, values, rtol=1e-3):
            raise CheckFailed(f"[{case}] {why}")
    wrong = [i for i, (a, b) in enumerate(zip(got, expected)) if not abs(a - b) <= 1e-4 * abs(b) + 1e-30]
    first = wrong[0]
    if wrong[-1] < len(expected) - 1:
        where = ("the last block's norm is right but lower blocks' differ: what flows back through the blocks "
                 "above them is wrong (how does each block combine h and F(h)?)")
    else:
        where = ("even the last block's norm differs, and no gradient has passed through another block there: "
                 "check the loss (h_L * upstream).sum() and that the norm covers all of the block's parameters")
    raise CheckFailed(f"[{case}] block {first + 1}: got {got[first]:.6g}, expected {expected[first]:.6g}; {where}")


def _measure(fn, seeds=(0, 1, 2, 3), depth=DEPTH, width=32):
    """log10(first block's gradient, plain / residual) on the exercise's stack, mean over `seeds`."""
    logs = []
    for seed in seeds:
        g = torch.Generator().manual_seed(1000 + seed)
        x, upstream = torch.randn(32, width, generator=g), torch.randn(32, width, generator=g)
        plain = fn(exercise_stack(depth, width, seed), x, upstream, False)
        res = fn(exercise_stack(depth, width, seed), x, upstream, True)
        logs.append(math.log10(float(plain[0]) / float(res[0])))
    return sum(logs) / len(logs)


# c: the factor by which one plain FFN block multiplies the squared norm of the gradient going back
# (W2ᵀ: d·(1/(3·4d)) = 1/3; ReLU: 1/2; W1ᵀ: 4d·(1/(3d))·(1/4) = 1/3), so 1/18; a residual block multiplies it by 1 + c.
DERIVED = (DEPTH - 1) / 2 * math.log10((1 / 18) / (1 + 1 / 18))   # ≈ -14.7; measured -14.8 ± 0.2 (8 inits)


@exercise("08.gradients", points=3, uses=("block_gradient_norms", "predicted_log10_ratio"))
def check_gradients(fn, predicted, rng):
    """The gradient norm of each block's parameters, with and without the identity path, on hidden stacks."""
    # the worked example first: two blocks F(h) = 2h + 1, x = upstream = [[1.0]]
    for residual, expected in ((False, [2 * math.sqrt(2), math.sqrt(10)]), (True, [3 * math.sqrt(2), math.sqrt(17)])):
        case = f"worked example: two blocks F(h) = 2h + 1, x = upstream = [[1.0]], residual={residual}"
        branches = nn.ModuleList(nn.Linear(1, 1) for _ in range(2))
        with torch.no_grad():
            for b in branches:
                b.weight.fill_(2.0), b.bias.fill_(1.0)
        got = _as_values(case, call_learner(case, fn, branches, torch.ones(1, 1), torch.ones(1, 1), residual), 2)
        _compare(case, got, branches, torch.ones(1, 1), torch.ones(1, 1), residual, None)
    kinds = ["ffn", "linear", "tanh mlp", "pre-LN", "ffn"]
    for i, kind in enumerate(kinds):
        for attempt in range(10):   # a plain stack whose gradients' squares would leave float32's range: draw again
            depth = [randint(rng, 1, 6), randint(rng, 6, 20), randint(rng, 2, 12), randint(rng, 4, 17),
                     randint(rng, 16, DEPTH + 1)][i] if attempt < 9 else 2
            d, n = randint(rng, 2, 12) if i < 3 else randint(rng, 3 if i == 3 else 6, 13), randint(rng, 1, 9)
            branches = nn.ModuleList(_branch(kind, d, rng) for _ in range(depth))
            x, upstream = torch.randn(n, d, generator=rng) * 2, torch.randn(n, d, generator=rng)
            if min(reference(branches, x, upstream, False)) > 1e-13:
                break
        earlier = None
        for residual in (False, True):   # the same stack twice: gradients left in .grad would show
            case = f"case {i}: {depth} blocks of a {kind} branch, width {d}, x ({n}, {d}), residual={residual}"
            got = _as_values(case, call_learner(case, fn, branches, x.clone(), upstream.clone(), residual), depth)
            earlier = _compare(case, got, branches, x, upstream, residual, earlier)
    case = f"the exercise's {DEPTH}-block stack"
    measured = _measure(lambda *a: _as_values(case, call_learner(case, fn, *a), DEPTH))
    said = (f"you predicted log10(plain / residual) = {float(predicted):.3g}"
            if isinstance(predicted, numbers.Real) and not isinstance(predicted, bool) else "no prediction recorded")
    return (f"{said}; your measurement on the exercise's {DEPTH}-block stack gives {measured:.1f} "
            f"(the mean over 4 initialisations): the plain stack's first block gets about 10^{measured:.0f} of "
            "the residual stack's gradient")


@exercise("08.prediction", points=1, uses="predicted_log10_ratio")
def check_prediction(value, rng):
    """The predicted order of magnitude, log10(first block's gradient, plain / residual), 24 FFN blocks."""
    if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise CheckFailed("write your prediction as a number: predicted_log10_ratio = ... (a log10)")
    value = float(value)
    if 0 < value < 1e-3:
        raise CheckFailed(f"{value:g} looks like the ratio itself: write its log10 (e.g. a ratio of 1e-5 is -5)")
    if abs(value - DERIVED) <= 1.5:
        return (f"you predicted {value:.3g}; the derivation gives ({DEPTH} - 1)/2 · log10(c / (1 + c)) with c = 1/18 "
                f"per block, {DERIVED:.1f}, and the measurement about -14.8 (± 0.3 from one initialisation to the next)")
    known = [((DEPTH - 1) / 2 * math.log10(1 / 7), "this is the lesson's factor, 1/6 per block for its one-layer branch "
              "(1/7 against the residual's 1 + 1/6): count again for this branch's two layers and its hidden width 4d"),
             ((DEPTH - 1) / 2 * math.log10(1 / 10), "a factor of about 1/9 per block: did you leave out the ReLU, which "
              "keeps half of the squared norm?"),
             ((DEPTH - 1) * math.log10(1 / 19), "the per-block factor multiplies the squared norm: the norm itself "
              "takes its square root, (23/2) · log10(...), not 23 · log10(...)")]
    for target, why in known:
        if abs(value - target) <= 1.0:
            raise CheckFailed(f"you predicted {value:.3g}: {why}")
    if value >= 0:
        raise CheckFailed(f"you predicted {value:.3g}, i.e. the plain stack's first block gets at least as much "
                          "gradient as the residual one's: which of the two multiplies what flows back by I + ∂F/∂h?")
    raise CheckFailed(f"you predicted {value:.3g}: not within 1.5 of the derivation's order of magnitude. Count the "
                      "factor by which one plain block multiplies the squared norm of the gradient going back (each "
                      "nn.Linear's fan-in and its default init's variance, the ReLU), and the residual block's, "
                      "over the 23 blocks above the first")


# ---------------------------------------------------------------- ReZero: a gated residual block


def _sublayer(rng, d):
    kind = randint(rng, 0, 2)
    sub = nn.Linear(d, d) if kind == 0 else nn.Sequential(nn.Linear(d, d + 3), nn.Tanh(), nn.Linear(d + 3, d))
    with torch.no_grad():
        for p in sub.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=rng) + 0.1)   # F(0) != 0: a bias is present
    return sub


def _own_gate(case, module, sub):
    expect(isinstance(module, nn.Module), f"[{case}] GatedResidual should be an nn.Module, got {module.__class__.__name__}")
    params = list(module.parameters())
    mine = {id(p) for p in params}
    expect(all(id(p) in mine for p in sub.parameters()),
           f"[{case}] the sublayer's parameters are not among the block's: store the sublayer as an attribute "
           "(after super().__init__()) so that an optimizer of the block trains it")
    own = [p for p in params if id(p) not in {id(q) for q in sub.parameters()}]
    expect(len(own) > 0, f"[{case}] the block has no parameter of its own: the gate must be an nn.Parameter, or "
                         "the optimizer never changes it and the block stays the identity for ever")
    expect(len(own) == 1, f"[{case}] the block has {len(own)} parameters besides the sublayer's: one gate tensor")
    return own[0]


@exercise("08.gate", points=2, uses="GatedResidual")
def check_gate(cls, rng):
    """ReZero: x + gate · F(x) with a learnable gate starting at 0, any shape that broadcasts over x."""
    for i in range(4):
        d = randint(rng, 2, 10)
        lead = tuple(randint(rng, 1, 5) for _ in range(randint(rng, 1, 3)))
        x = torch.randn(*lead, d, generator=rng) * 2 + 0.5
        sub = _sublayer(rng, d)
        case = f"case {i}: GatedResidual(sublayer) just built, x {tuple(x.shape)}"
        module = call_learner(case, cls, sub)
        gate = _own_gate(case, module, sub)
        try:
            fits = torch.broadcast_shapes(tuple(gate.shape), tuple(x.shape)) == tuple(x.shape)
        except RuntimeError:
            fits = False
        expect(fits, f"[{case}] a gate of shape {tuple(gate.shape)} does not broadcast over x {tuple(x.shape)} "
                     "without changing its shape: a scalar, (1,) or (d,) does")
        xs = x.clone().requires_grad_(True)
        out = call_learner(case, module, xs)
        expect(isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(x.shape),
               f"[{case}] the output should have x's shape {tuple(x.shape)}, got "
               f"{tuple(out.shape) if isinstance(out, torch.Tensor) else out.__class__.__name__}")
        if not torch.equal(out.detach(), x):
            with torch.no_grad():
                branch = sub(x)
                if torch.allclose(out.detach(), torch.zeros_like(x)):
                    why = "the gate multiplies the whole sum, gate · (x + F(x)): it belongs on the branch only"
                elif torch.allclose(out.detach(), x + sub(torch.zeros_like(x))):
                    why = "this is x + F(gate · x): the gate scales the branch's output, not its input"
                elif torch.allclose(out.detach(), x + branch, atol=1e-5):
                    why = "this is x + F(x): the gate is missing, or starts at 1 - ReZero's starts at 0"
                else:
                    why = "at initialisation every block should be exactly the identity (the gate starts at 0)"
            raise CheckFailed(f"[{case}] the output differs from x: {why}")
        upstream = torch.randn(x.shape, generator=rng)
        module.zero_grad()
        (out * upstream).sum().backward()
        expect(xs.grad is not None and torch.equal(xs.grad, upstream),
               f"[{case}] at initialisation the gradient reaching x should be exactly the upstream gradient "
               "(the block is the identity)")
        expect(all(p.grad is None or not p.grad.any() for p in sub.parameters()),
               f"[{case}] at initialisation the sublayer's parameters should get zero gradient (gate 0)")
        g = torch.zeros(gate.shape, requires_grad=True)
        with torch.enable_grad():
            (((x + g * sub(x)) * upstream).sum()).backward()
        expect(gate.grad is not None, f"[{case}] no gradient reached the gate: is it detached, or not used?")
        expect(torch.allclose(gate.grad, g.grad, atol=1e-4 * max(1.0, float(g.grad.abs().max())), rtol=1e-4),
               f"[{case}] the gate's gradient at initialisation should be Σ upstream · F(x) (summed over the "
               "dimensions the gate broadcasts over): this is how a gate that starts at 0 starts to grow")
        # a trained gate: random values of the learner's own shape
        case = f"case {i}: the gate set to random values, x {tuple(x.shape)}"
        value = torch.randn(gate.shape, generator=rng) + 0.5
        with torch.no_grad():
            gate.copy_(value)
        out = call_learner(case, module, x)
        with torch.no_grad():
            expected = x + value * sub(x)
            if isinstance(out, torch.Tensor) and out.shape == x.shape and not torch.allclose(out, expected, atol=1e-5):
                if torch.allclose(out, value * (x + sub(x)), atol=1e-5):
                    raise CheckFailed(f"[{case}] the gate multiplies the whole sum: it belongs on the branch only, "
                                      "x + gate · F(x)")
                if torch.allclose(out, x + sub(value * x), atol=1e-5):
                    raise CheckFailed(f"[{case}] this is x + F(gate · x): the gate scales the branch's output")
        expect(isinstance(out, torch.Tensor) and torch.allclose(out.detach(), expected, atol=1e-5, rtol=1e-5),
               f"[{case}] the output should be x + gate · F(x) with your gate's values")


written("08.written", points=2, rubric=(
    "A residual block's Jacobian is I + ∂F/∂x, so the gradient reaching an early block is the top gradient plus "
    "corrections, not only a product of many Jacobians: at initialisation the first block gets a gradient of the "
    "same order as the last (the lesson's plain 32-block stack with PyTorch's default init passes about 1e-12 of it)",
    "Vanishing gradients are only part of it: He initialisation or LayerNorm also give a plain stack healthy "
    "gradients at initialisation, yet the deep plain net still trains worse than a shallow one (degradation); "
    "the identity path makes deep nets trainable across learning rates and initialisations",
    "Each block only adds a correction to the residual stream (the identity is the default), so deleting one "
    "block of a trained deep residual net costs little (Veit et al.'s lesion study), while deleting a layer of a "
    "plain net breaks it; that robustness needs depth as well as the identity path",
))
