"""Graded checks for lesson 10 (where does BERT's non-linearity come from?).

- 10.exponent (predict, then measure): the learner measures how a piece's additivity error shrinks with the
  input's scale σ (the exponent p of error ∝ σ^p: 0 when it does not shrink), on hidden pieces against a
  reference written here; the note shows the measurement on the exercise's five pieces beside the prediction.
- 10.prediction: the predicted exponents of five pieces, derivations (Taylor series, homogeneity).
- 10.collapse (apply): a stack of affine pieces (Linear, Dropout and BatchNorm in eval mode, Identity) collapsed
  into one nn.Linear, checked by its outputs.
- 10.collapse-nonlinear: the same function refuses (ValueError) a stack with a non-linear piece.
- 10.written: the interview answer, graded by a person.
"""
import math
import numbers

import torch
from torch import nn

from ..grader.authoring import CheckFailed, call_learner, exercise, expect, randint, written

# ---------------------------------------------------------------- how a piece's non-linearity scales with σ

PIECES = ("ReLU FFN", "GELU FFN", "tanh FFN", "LayerNorm", "attention")
EXPONENTS = {"ReLU FFN": 0, "GELU FFN": 1, "tanh FFN": 2, "LayerNorm": 0, "attention": 2}

#: hidden pieces (torch's own modules) -> the exponent their Taylor series or homogeneity gives
HIDDEN = {"ReLU FFN, no biases": 0, "LeakyReLU FFN, no biases": 0, "GELU FFN with biases": 1,
          "SiLU FFN, no biases": 1, "Softplus FFN, no biases": 1, "tanh FFN, no biases": 2,
          "sigmoid FFN, no biases": 2, "tanh FFN with biases": 1, "LayerNorm": 0, "softmax over features": 1,
          "LayerNorm then Linear": 0}


def _hidden_piece(name, d, rng):
    h = randint(rng, d, 4 * d + 1)
    act = {"ReLU": nn.ReLU, "LeakyReLU": lambda: nn.LeakyReLU(0.1), "GELU": nn.GELU, "SiLU": nn.SiLU,
           "Softplus": nn.Softplus, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}
    if "FFN" in name:
        bias = "with biases" in name
        piece = nn.Sequential(nn.Linear(d, h, bias=bias), act[name.split()[0]](), nn.Linear(h, d, bias=bias))
    elif name == "LayerNorm":
        piece = nn.LayerNorm(d, eps=1e-12)
    elif name == "softmax over features":
        piece = nn.Softmax(dim=-1)
    else:
        piece = nn.Sequential(nn.LayerNorm(d, eps=1e-12), nn.Linear(d, d))
    with torch.no_grad():
        for m in piece.modules():
            if isinstance(m, nn.Linear):
                m.weight.copy_(torch.randn(m.weight.shape, generator=rng) / math.sqrt(m.in_features))
                if m.bias is not None:
                    m.bias.copy_(torch.randn(m.bias.shape, generator=rng) / math.sqrt(m.in_features))
            elif isinstance(m, nn.LayerNorm):
                m.weight.copy_(1 + 0.3 * torch.randn(m.weight.shape, generator=rng))
                m.bias.copy_(0.3 * torch.randn(m.bias.shape, generator=rng))
    return piece.double().eval()


def _errors(f, x, y, sigmas, kind="relative"):
    """Additivity errors of f at each σ, the lesson's definition (kind="relative") or a known mistake."""
    out = []
    with torch.no_grad():
        for s in sigmas:
            a, b = s * x, (s * y if kind != "x only" else y)
            f0 = f(torch.zeros_like(x))
            fa, fb, fab = f(a), f(b), f(a + b)
            if kind == "no f(0)":
                gap, size = fab - fa - fb, fa.norm() + fb.norm()
            else:
                gap, size = fab - fa - fb + f0, (fa - f0).norm() + (fb - f0).norm()
            out.append(float(gap.norm() / size) if kind != "absolute" else float(gap.norm()))
    return out


def _slope(errors, sigmas):
    """Least-squares slope of log10(error) against log10(σ)."""
    xs, ys = [math.log10(s) for s in sigmas], [math.log10(max(e, 1e-300)) for e in errors]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((a - mx) * (b - my) for a, b in zip(xs, ys)) / sum((a - mx) ** 2 for a in xs)


def reference_exponent(f, x, y, sigmas):
    return _slope(_errors(f, x, y, sigmas), sigmas)


def _as_number(case, got):
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        raise CheckFailed(f"[{case}] return the exponent as one number, got {got.__class__.__name__}")
    return float(got)


def _diagnose_exponent(case, got, f, x, y, sigmas, expected):
    if abs(got - expected) <= 0.15:
        return
    errors = _errors(f, x, y, sigmas)
    known = [(-expected, "the sign is flipped: an error that shrinks as σ shrinks has a positive exponent "
                         "(fit log(error) against log(σ), in that order)"),
             (_slope(_errors(f, x, y, sigmas, "absolute"), sigmas),
              "this is the exponent of the absolute gap ‖f(x+y) - f(x) - f(y) + f(0)‖: divide it by the size of f's "
              "response, as the lesson's relative error does"),
             (_slope(_errors(f, x, y, sigmas, "no f(0)"), sigmas),
              "without f(0): an affine map with a constant (a bias, σ(0) = 1/2, softmax(0) = 1/T) fails "
              "f(x+y) = f(x) + f(y) by f(0); subtract it as the lesson does"),
             (_slope(_errors(f, x, y, sigmas, "x only"), sigmas), "only x was scaled: scale both inputs by σ")]
    if expected:
        known += [(expected * math.log(10), "a slope of ln(error) against log10(σ): use one base for both"),
                  (expected / math.log(10), "a slope of log10(error) against ln(σ): use one base for both")]
    matches = [why for target, why in known if abs(got - target) <= 0.1 and abs(target - expected) > 0.3]
    if matches:
        raise CheckFailed(f"[{case}] got {got:.3g}, expected {expected:.2f}: " + "; or ".join(matches))
    if any(abs(got - e) <= 1e-3 * max(e, 1e-12) for e in errors):
        raise CheckFailed(f"[{case}] got {got:.3g}: this is the additivity error at one σ, not how it scales "
                          "with σ (the slope of log error against log σ)")
    raise CheckFailed(f"[{case}] got {got:.3g}, expected {expected:.2f} (the slope of log10 of the lesson's relative "
                      f"additivity error against log10 σ, here {', '.join(f'{e:.3g}' for e in errors)} at "
                      f"σ = {', '.join(f'{s:g}' for s in sigmas)})")


def _note(fn, predicted, make_pieces):
    """The learner's measurement on the exercise's five pieces, beside the prediction."""
    if make_pieces is None:
        return ""
    try:
        pieces = make_pieces()
        g = torch.Generator().manual_seed(0)
        x, y = (torch.randn(8, 6, 16, generator=g, dtype=torch.float64) for _ in range(2))
        measured = {name: _as_number(name, fn(pieces[name], x, y, (1e-3, 1e-2))) for name in PIECES}
    except Exception:  # noqa: BLE001 - the note is a courtesy; the graded cases passed
        return ""
    shown = ", ".join(f"{n} {v:.2f}" for n, v in measured.items())
    said = (", ".join(f"{n} {predicted[n]}" for n in PIECES if n in predicted)
            if isinstance(predicted, dict) else "no prediction recorded")
    return f"you predicted {said}; your measurement on the exercise's pieces gives {shown}"


@exercise("10.exponent", points=3, uses=("nonlinearity_exponent", "predicted_exponents", "make_pieces"))
def check_exponent(fn, predicted, make_pieces, rng):
    """The exponent of the additivity error's scaling with σ, on hidden pieces and scales."""
    names = list(HIDDEN)
    order = [names[randint(rng, 0, len(names))] for _ in range(4)]
    order = ["ReLU FFN, no biases", "tanh FFN, no biases", "sigmoid FFN, no biases", "softmax over features"] + order
    for i, name in enumerate(order):
        d, n = randint(rng, 3, 13), randint(rng, 2, 9)
        piece = _hidden_piece(name, d, rng)
        x = torch.randn(n, d, generator=rng, dtype=torch.float64)
        y = torch.randn(n, d, generator=rng, dtype=torch.float64)
        low = -4 + float(torch.rand((), generator=rng))                 # log10 σ from -4..-3 ...
        count = randint(rng, 2, 5)
        sigmas = tuple(10 ** (low + 1.5 * k / (count - 1)) for k in range(count))   # ... over 1.5 decades
        case = (f"case {i}: {name}, width {d}, x and y ({n}, {d}) float64, "
                f"sigmas ({', '.join(f'{s:.3g}' for s in sigmas)})")
        expected = reference_exponent(piece, x, y, sigmas)
        got = _as_number(case, call_learner(case, fn, piece, x.clone(), y.clone(), sigmas))
        _diagnose_exponent(case, got, piece, x, y, sigmas, expected)
    return _note(fn, predicted, make_pieces)


_WHY = {
    ("ReLU FFN", 1): "ReLU is positively homogeneous, ReLU(σz) = σ ReLU(z), and so is an FFN without biases: its "
                     "relative error is the same at every scale",
    ("ReLU FFN", 2): "ReLU is positively homogeneous, ReLU(σz) = σ ReLU(z), and so is an FFN without biases: its "
                     "relative error is the same at every scale",
    ("GELU FFN", 0): "GELU is smooth at 0: GELU(z) ≈ z/2 + z²/√(2π), so small inputs see a nearly linear map",
    ("GELU FFN", 2): "GELU is not odd: its Taylor series at 0 has a z² term, z²/√(2π), next to the linear z/2",
    ("tanh FFN", 1): "tanh is odd: its series at 0 has no z² term, the first non-linear one is -z³/3",
    ("tanh FFN", 0): "tanh is smooth at 0 (tanh z ≈ z - z³/3): small inputs see a nearly linear map",
    ("LayerNorm", 1): "LN(σx) = LN(x) (ε aside): LayerNorm is scale-invariant, so its error does not shrink",
    ("LayerNorm", 2): "LN(σx) = LN(x) (ε aside): LayerNorm is scale-invariant, so its error does not shrink",
    ("attention", 0): "softmax is smooth: for small inputs the scores are near 0 and the weights nearly uniform",
    ("attention", 1): "without biases the scores q·k are quadratic in x, so the weights move away from uniform by "
                      "O(σ²): the non-linear part of the output is cubic against a linear part",
}


@exercise("10.prediction", points=1, uses="predicted_exponents")
def check_prediction(predicted, rng):
    """The predicted exponents of the five pieces, from their Taylor series or homogeneity."""
    if not isinstance(predicted, dict):
        raise CheckFailed("write your predictions as a dict: predicted_exponents = {\"ReLU FFN\": ..., ...}")
    missing = [n for n in PIECES if n not in predicted]
    if missing:
        raise CheckFailed(f"predicted_exponents misses {', '.join(missing)}: predict all five pieces "
                          f"({', '.join(PIECES)})")
    wrong = []
    for name in PIECES:
        value = predicted[name]
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise CheckFailed(f"predicted_exponents[{name!r}] should be a number, got {type(value).__name__}")
        if abs(value - EXPONENTS[name]) > 0.25:
            why = _WHY.get((name, round(value)), "the error's size at small σ is set by the first non-linear "
                                                 "term of the piece's expansion, relative to its linear part")
            wrong.append(f"{name} {value:g}: {why}")
    if wrong:
        raise CheckFailed("; ".join(wrong))
    return ("you predicted " + ", ".join(f"{n} {predicted[n]:g}" for n in PIECES) +
            ": ReLU and LayerNorm are as non-linear at every scale, GELU fades like σ, tanh and bias-free attention "
            "like σ² - small inputs see nearly linear GELU and attention (the lesson's panel b)")


# ---------------------------------------------------------------- collapsing an affine stack into one layer

def _random_linear(d_in, d_out, rng, bias=True):
    layer = nn.Linear(d_in, d_out, bias=bias)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.randn(p.shape, generator=rng) / math.sqrt(d_in))
    return layer


def _batchnorm(d, rng):
    bn = nn.BatchNorm1d(d)
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(d, generator=rng) * 0.5)
        bn.running_var.copy_(torch.rand(d, generator=rng) * 1.5 + 0.5)
        bn.weight.copy_(torch.randn(d, generator=rng) * 0.5 + 1.0)
        bn.bias.copy_(torch.randn(d, generator=rng) * 0.5)
    return bn


def _affine_stack(rng, kinds):
    """An nn.Sequential of affine pieces in eval mode; `kinds` lists them between the linear layers."""
    widths = [randint(rng, 2, 9) for _ in range(sum(k == "linear" for k in kinds) + 1)]
    modules, w = [], 0
    for kind in kinds:
        if kind == "linear":
            modules.append(_random_linear(widths[w], widths[w + 1], rng, bias=randint(rng, 0, 4) > 0))
            w += 1
        elif kind == "batchnorm":
            modules.append(_batchnorm(widths[w], rng))
        elif kind == "dropout":
            modules.append(nn.Dropout(0.1 + 0.4 * float(torch.rand((), generator=rng))))
        else:
            modules.append(nn.Identity())
    return nn.Sequential(*modules).eval(), widths[0]


def _stack_variant(stack, x, kind):
    """What a known mistake computes (None when it does not apply to this stack)."""
    with torch.no_grad():
        h = x
        linears = [m for m in stack if isinstance(m, nn.Linear)]
        if kind == "last bias only":
            for m in stack:
                if isinstance(m, nn.Linear):
                    h = h @ m.weight.T
                elif isinstance(m, nn.BatchNorm1d):
                    h = m(h)
            last = linears[-1]
            return h + (last.bias if last.bias is not None else 0) if linears else None
        if kind == "biases summed":
            biases = [m.bias for m in linears if m.bias is not None]
            if any(isinstance(m, nn.BatchNorm1d) for m in stack) or len(biases) < 2 or any(
                    b.shape != biases[-1].shape for b in biases):
                return None
            out = x
            for m in linears:
                out = out @ m.weight.T
            return out + sum(biases)
        if kind == "batchnorm ignored":
            if not any(isinstance(m, nn.BatchNorm1d) for m in stack):
                return None
            for m in stack:
                if not isinstance(m, nn.BatchNorm1d):
                    h = m(h)
            return h
        if kind in ("dropout scaled", "dropout rescaled"):
            if not any(isinstance(m, nn.Dropout) for m in stack):
                return None
            for m in stack:
                if isinstance(m, nn.Dropout):
                    h = h * ((1 - m.p) if kind == "dropout scaled" else 1 / (1 - m.p))
                else:
                    h = m(h)
            return h
    return None


_STACK_WHY = {
    "last bias only": "only the last layer's bias is kept: an earlier bias passes through the later layers, "
                      "W2 (W1 x + b1) + b2 = W2 W1 x + (W2 b1 + b2)",
    "biases summed": "the biases are summed: an earlier bias is multiplied by the later weights, W2 b1 + b2",
    "batchnorm ignored": "BatchNorm was skipped: in eval mode it is a fixed affine map per channel, "
                         "γ (x - running_mean) / √(running_var + ε) + β, which belongs in the collapsed layer",
    "dropout scaled": "Dropout in eval mode is the identity (PyTorch rescales by 1/(1 - p) while training)",
    "dropout rescaled": "Dropout in eval mode is the identity (PyTorch rescales by 1/(1 - p) while training)",
}


def _describe(stack):
    return " -> ".join(type(m).__name__ + (f"({m.in_features}, {m.out_features}"
                                           f"{'' if m.bias is not None else ', bias=False'})"
                                           if isinstance(m, nn.Linear) else "") for m in stack)


def _call(case, fn, stack):
    """(the ValueError's message or None, the result): the learner's ValueError is an answer here."""
    try:
        return None, fn(stack)
    except ValueError as error:
        return str(error) or "ValueError", None
    except (CheckFailed, NotImplementedError):
        raise
    except Exception as error:  # noqa: BLE001 - the learner's code
        raise CheckFailed(f"[{case}] your code raised {type(error).__name__}: {error}") from None


@exercise("10.collapse", points=2, uses="collapse")
def check_collapse(fn, rng):
    """A stack of affine pieces collapsed into one nn.Linear that computes the same map."""
    plans = [["linear", "identity", "linear"],                       # an FFN without its activation
             ["linear", "linear", "linear"],
             ["linear", "dropout", "linear", "identity"],
             ["linear", "batchnorm", "linear"],
             ["batchnorm", "linear", "dropout", "linear", "batchnorm", "linear"],
             ["linear"]]
    for i, plan in enumerate(plans):
        stack, d_in = _affine_stack(rng, plan)
        x = torch.randn(randint(rng, 1, 9), d_in, generator=rng)
        with torch.no_grad():
            expected = stack(x)
        case = f"case {i}: {_describe(stack)} (eval mode)"
        refused, layer = _call(case, fn, stack)
        if refused is not None:
            why = ("BatchNorm in eval mode uses fixed running statistics: an affine map per channel"
                   if "batchnorm" in plan else "Dropout in eval mode is the identity" if "dropout" in plan else
                   "every piece here is affine")
            raise CheckFailed(f"[{case}] raised ValueError ({refused}), but this stack is affine: {why}")
        expect(isinstance(layer, nn.Linear), f"[{case}] return one nn.Linear, got {layer.__class__.__name__}")
        shape = tuple(layer.weight.shape)
        expect(shape == (expected.shape[-1], d_in),
               f"[{case}] the weight has shape {shape}, expected {(expected.shape[-1], d_in)} (nn.Linear stores "
               "(out_features, in_features))" + (" - a product of the weights in the wrong order?"
                                                 if shape == (d_in, expected.shape[-1]) else ""))
        with torch.no_grad():
            got = call_learner(case, layer, x)
        tol = 1e-5 * max(1.0, float(expected.abs().max()))
        expect(isinstance(got, torch.Tensor) and got.shape == expected.shape,
               f"[{case}] your layer should map x {tuple(x.shape)} to the stack's output shape {tuple(expected.shape)}")
        if not torch.allclose(got, expected, atol=tol, rtol=1e-5):
            for kind, why in _STACK_WHY.items():
                wrong = _stack_variant(stack, x, kind)
                if (wrong is not None and not torch.allclose(wrong, expected, atol=tol)
                        and torch.allclose(got, wrong, atol=tol, rtol=1e-4)):
                    raise CheckFailed(f"[{case}] {why}")
            with torch.no_grad():
                zero = torch.zeros(1, d_in)
                right_slope = torch.allclose(got - call_learner(case, layer, zero), expected - stack(zero),
                                             atol=tol, rtol=1e-5)
            raise CheckFailed(f"[{case}] your layer's output differs from the stack's: " + (
                "the weights are right (the outputs differ by a constant), the bias is not" if right_slope else
                "already the weight is wrong: the first layer acts first, W = W_last ... W_first"))
        if i == 0:
            ffn_params, one_layer = sum(p.numel() for p in stack.parameters()), shape[0] * (shape[1] + 1)
    return (f"case 0, an FFN without its activation, had {ffn_params} parameters in two layers; the single layer "
            f"that computes the same map has {one_layer}")


@exercise("10.collapse-nonlinear", points=1, uses="collapse")
def check_collapse_nonlinear(fn, rng):
    """A stack with a non-linear piece has no single-layer equivalent: ValueError."""
    for i, name in enumerate(("LayerNorm", "GELU", "ReLU", "Tanh", "Softmax", "SiLU")):
        d = randint(rng, 3, 9)   # (a LayerNorm of 2 features is a step function: ±1 whatever the size)
        piece = {"LayerNorm": lambda: nn.LayerNorm(d), "GELU": nn.GELU, "ReLU": nn.ReLU, "Tanh": nn.Tanh,
                 "Softmax": lambda: nn.Softmax(dim=-1), "SiLU": nn.SiLU}[name]()
        stack = nn.Sequential(_random_linear(d, d, rng), piece, _random_linear(d, randint(rng, 2, 8), rng)).eval()
        case = f"case {i}: {_describe(stack)} (eval mode)"
        why = {"LayerNorm": "LayerNorm divides each token by its own standard deviation, which depends on x: "
                            "unlike BatchNorm in eval mode, its statistics are not fixed",
               "Softmax": "softmax divides by a sum of exponentials of x"}.get(name, f"{name} bends its input")
        refused, got = _call(case, fn, stack)
        if refused is None:
            raise CheckFailed(f"[{case}] got {got.__class__.__name__} back, but {why}: no single linear layer computes "
                              "this stack; raise ValueError")


written("10.written", points=2, rubric=(
    "Several places, not only GELU: the FFN's activation (GELU) is the only element-wise one; without it the two "
    "linear layers collapse into one (W2 W1 x + W2 b1 + b2)",
    "Self-attention is non-linear because its weights are computed from the input and multiply values that are "
    "also computed from it (a product), with or without the softmax; it is linear only when the weights do not "
    "depend on the input",
    "LayerNorm divides each token by its own standard deviation (scale-invariant, LN(2x) = LN(x)): non-linear, "
    "and inside a block it dominates the measured additivity error; BERT's heads add a tanh (pooler) and a GELU + "
    "LayerNorm (MLM head)",
    "Sizes differ from usefulness: the measured error of GELU and attention fades for small inputs while "
    "LayerNorm's does not, yet GELU is what learns the lesson's sign-product task fastest; a block with all "
    "sources removed is exactly linear and cannot learn it",
))
