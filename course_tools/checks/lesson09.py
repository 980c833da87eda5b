"""Graded checks for lesson 09 (why does BERT need warm-up, and why did later models move LayerNorm inside
the residual branch?).

- 09.adam-updates (predict, then measure): the learner writes Adam's update (torch.optim.Adam's, without using
  it) and measures the RMS of every step's update on a given stream of gradients and learning rates; checked
  against a reference on hidden streams; the note shows the first and the later updates on the exercise's
  pure-noise stream, with and without warm-up, beside the learner's predictions.
- 09.prediction: those predictions, derivations (Adam's step-1 update; its typical later one on pure noise).
- 09.warmup (apply): the shortest linear warm-up that keeps every Adam update under a cap, checked by its
  two properties (it keeps the cap; one step shorter does not).
- 09.written: the interview answer, graded by a person.
"""
import math
import numbers

import torch

from ..grader.authoring import CheckFailed, call_learner, exercise, randint, written

_ADAM = ("torch.optim:Adam", "torch.optim:AdamW", "torch.optim:RAdam", "torch.optim:NAdam", "torch.optim:Adamax",
         "torch.optim:SparseAdam", "torch.optim.adam:adam", "torch.optim.adamw:adamw", "torch.optim.radam:radam",
         "torch.optim.nadam:nadam", "torch:_fused_adam_", "torch:_fused_adamw_")

BETAS = (0.9, 0.999)
LATER = math.sqrt((1 - BETAS[0]) / (1 + BETAS[0]))   # RMS of m̂/√v̂ on pure noise, once both estimates settle


def adam_reference(grads, lrs, beta1=0.9, beta2=0.999, eps=1e-8, *, correct_m=True, correct_v=True,
                   eps_inside=False, lr_shift=0, stat="rms"):
    """The RMS (or another statistic, for the diagnoses) of every step's update, in float64.
    The keywords other than the first five are known mistakes."""
    g64 = grads.double()
    m, v, out = torch.zeros_like(g64[0]), torch.zeros_like(g64[0]), []
    for t in range(1, g64.shape[0] + 1):
        g = g64[t - 1]
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        m_hat = m / (1 - beta1 ** t) if correct_m else m
        v_hat = v / (1 - beta2 ** t) if correct_v else v
        denom = (v_hat + eps).sqrt() if eps_inside else v_hat.sqrt() + eps
        index = min(max(t - 1 + lr_shift, 0), len(lrs) - 1)
        update = float(lrs[index]) * m_hat / denom
        out.append(float(update.pow(2).mean().sqrt()) if stat == "rms" else
                   float(update.abs().mean()) if stat == "mean abs" else float(update.pow(2).mean()))
    return out


def noise_stream(steps=200, n=2_000, scale=1e-3, seed=0):
    """The exercise's gradients (the set-up cell's `noise_gradients`): pure noise of one scale, no signal."""
    return scale * torch.randn(steps, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _as_values(case, got, steps):
    if isinstance(got, torch.Tensor):
        if got.dim() != 1:
            raise CheckFailed(f"[{case}] return one number per step, a 1-D tensor or a list, got shape {tuple(got.shape)}")
        got = got.detach().double().tolist()
    if not isinstance(got, (list, tuple)) or not all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                                                     for v in got):
        raise CheckFailed(f"[{case}] return one number per step (a list of floats or a 1-D tensor), "
                          f"got {got.__class__.__name__}")
    if len(got) != steps:
        raise CheckFailed(f"[{case}] got {len(got)} values for {steps} steps: one per step")
    return [float(v) for v in got]


def _close(got, expected, rtol=1e-4):
    scale = max(abs(v) for v in expected) if expected else 1.0
    return all(abs(a - b) <= rtol * abs(b) + 1e-9 * scale for a, b in zip(got, expected))


_MISTAKES = [
    (dict(correct_m=False, correct_v=False), "no bias correction: m and v start at 0, so early on they are far too "
     "small; torch.optim.Adam divides m by 1 - β1^t and v by 1 - β2^t"),
    (dict(correct_v=False), "only m is bias-corrected: v needs its own correction, 1 - β2^t"),
    (dict(correct_m=False), "only v is bias-corrected: m needs its own correction, 1 - β1^t"),
    (dict(eps_inside=True), "ε is inside the square root: torch.optim.Adam adds it to √v̂"),
    (dict(lr_shift=1), "each step used the next step's learning rate: lrs[0] is step 1's"),
    (dict(lr_shift=-1), "each step used the previous step's learning rate: lrs[0] is step 1's"),
    (dict(stat="mean abs"), "these are mean absolute updates: the RMS is the square root of the mean square"),
    (dict(stat="mean square"), "these are mean squared updates: take the square root"),
]


def _compare(case, got, grads, lrs, beta1, beta2, eps):
    expected = adam_reference(grads, lrs, beta1, beta2, eps)
    if _close(got, expected):
        return
    if not all(math.isfinite(v) for v in got):
        bad = next(t for t, v in enumerate(got) if not math.isfinite(v))
        raise CheckFailed(f"[{case}] step {bad + 1}: got {got[bad]}" + (
            ": a bias correction 1 - β^t is 0 at t = 0 - Adam counts its steps from 1" if bad == 0 else ""))
    for kw, why in _MISTAKES:
        if _close(got, adam_reference(grads, lrs, beta1, beta2, eps, **kw), rtol=1e-3):
            raise CheckFailed(f"[{case}] {why}")
    if _close(got, adam_reference(grads, lrs, beta2, beta1, eps), rtol=1e-3):
        raise CheckFailed(f"[{case}] β1 and β2 are swapped: β1 averages the gradient, β2 its square")
    lr_free = adam_reference(grads, torch.ones(len(lrs), dtype=torch.float64), beta1, beta2, eps)
    if _close(got, lr_free, rtol=1e-3):
        raise CheckFailed(f"[{case}] these are updates in units of lr: return the updates themselves (× lrs[t])")
    bad = next(t for t, (a, b) in enumerate(zip(got, expected)) if not _close([a], [b]))
    where = ("already at step 1, where m̂ and v̂ hold one gradient each" if bad == 0 else
             f"from step {bad + 1} on (step 1 is right): how do m and v carry over from one step to the next?")
    raise CheckFailed(f"[{case}] step {bad + 1}: got {got[bad]:.6g}, expected {expected[bad]:.6g}; wrong {where}")


def _stream(rng, kind, steps, n):
    scale = 10 ** (3 * float(torch.rand((), generator=rng)) - 1.5)          # RMS between ~0.03 and ~30
    noise = torch.randn(steps, n, generator=rng, dtype=torch.float64)
    if kind == "noise":
        return scale * noise
    mean = torch.randn(n, generator=rng, dtype=torch.float64)
    decay = torch.linspace(1.0, 0.1, steps, dtype=torch.float64)[:, None]   # the signal shrinks as training goes
    if kind == "signal":
        return scale * (3 * mean + 0.3 * noise)
    return scale * (decay * mean + noise)                                   # "training": a shrinking signal


def _lrs(rng, kind, steps):
    peak = 10 ** (-4 + 2 * float(torch.rand((), generator=rng)))
    t = torch.arange(1, steps + 1, dtype=torch.float64)
    if kind == "constant":
        return torch.full((steps,), peak, dtype=torch.float64)
    if kind == "warm-up":
        w = randint(rng, 1, steps)
        return peak * torch.clamp(t / (w + 1), max=1.0)
    return peak * torch.rand(steps, generator=rng, dtype=torch.float64)      # any sequence


def _prediction(value):
    return value is not None and not isinstance(value, bool) and isinstance(value, numbers.Real)


@exercise("09.adam-updates", points=3, uses=("adam_update_rms", "predicted_first_update", "predicted_later_update"),
          forbids=_ADAM)
def check_adam(fn, first, later, rng):
    """Adam's update RMS at every step, on hidden gradient streams and learning-rate sequences."""
    case = "worked example: grads [[3.0, -4.0]] then [[0.0, 0.0]], lrs [0.1, 0.1], default betas and eps"
    grads = torch.tensor([[3.0, -4.0], [0.0, 0.0]], dtype=torch.float64)
    lrs = torch.tensor([0.1, 0.1], dtype=torch.float64)
    got = _as_values(case, call_learner(case, fn, grads.clone(), lrs.clone()), 2)
    _compare(case, got, grads, lrs, 0.9, 0.999, 1e-8)
    plan = [("noise", "constant"), ("signal", "constant"), ("training", "warm-up"), ("noise", "any"),
            ("training", "constant")]
    for i, (grad_kind, lr_kind) in enumerate(plan):
        steps, n = randint(rng, 2, 60), randint(rng, 1, 300)
        grads, lrs = _stream(rng, grad_kind, steps, n), _lrs(rng, lr_kind, steps)
        beta1, beta2 = (0.9, 0.999) if i < 3 else (float(torch.empty(()).uniform_(0.5, 0.95, generator=rng)),
                                                     float(torch.empty(()).uniform_(0.9, 0.9999, generator=rng)))
        eps = 1e-8 if i < 4 else 1e-6
        dtype = torch.float32 if i == 1 else torch.float64
        case = (f"case {i}: {steps} steps of {n} {grad_kind} gradients ({dtype}), {lr_kind} lr, "
                f"betas ({beta1:.4g}, {beta2:.6g}), eps {eps:g}")
        args = (grads.to(dtype), lrs.to(dtype)) + (() if i < 3 else (beta1, beta2, eps))
        args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
        got = _as_values(case, call_learner(case, fn, *args), steps)
        _compare(case, got, grads.to(dtype), lrs, beta1, beta2, eps)
    # the note: the exercise's stream, at a constant lr and with a 50-step warm-up
    stream, peak = noise_stream(), 1e-3
    t = torch.arange(1, 201, dtype=torch.float64)
    case = "the exercise's pure-noise stream"
    constant = _as_values(case, call_learner(case, fn, stream, torch.full((200,), peak, dtype=torch.float64)), 200)
    warm = _as_values(case, call_learner(case, fn, stream, peak * torch.clamp(t / 51, max=1.0)), 200)
    late = sum(constant[100:]) / 100 / peak
    said = (f"you predicted {float(first):.3g} and {float(later):.3g}" if _prediction(first) and _prediction(later)
            else "no prediction recorded")
    return (f"{said} (in units of lr); your measurement on the exercise's pure-noise stream gives step 1: "
            f"{constant[0] / peak:.3f}, steps 101-200: {late:.3f} on average, so the first step is "
            f"{constant[0] / peak / late:.1f}x the typical later one; with a 50-step warm-up step 1 is "
            f"{warm[0] / peak:.3f} and no step exceeds {max(warm) / peak:.3f}")


@exercise("09.prediction", points=1, uses=("predicted_first_update", "predicted_later_update"))
def check_prediction(first, later, rng):
    """The predicted RMS of Adam's step-1 update and of its typical later update on pure noise, in units of lr."""
    for name, value in (("predicted_first_update", first), ("predicted_later_update", later)):
        if not _prediction(value) or not math.isfinite(value):
            raise CheckFailed(f"write your prediction as a number: {name} = ... (in units of lr)")
    first, later = float(first), float(later)
    if abs(first - 1.0) > 0.05:
        hints = [(1e-3, "the gradients' scale: Adam's update does not scale with the gradient, it divides by √v̂"),
                 ((1 - BETAS[0]) / math.sqrt(1 - BETAS[1]), "Adam without its bias corrections: at step 1, "
                  "m̂ = m / (1 - β1) and v̂ = v / (1 - β2) are exactly g and g²"),
                 (1 - BETAS[0], "(1 - β1): the bias correction of m undoes that factor at step 1"),
                 (0.0, "at step 1 there is one gradient: nothing has averaged out yet")]
        for target, why in hints:
            if abs(first - target) <= 0.05 * max(target, 1e-3):
                raise CheckFailed(f"predicted_first_update = {first:g} looks like {why}")
        raise CheckFailed(f"predicted_first_update = {first:g}: at step 1 what are m̂ and v̂, and so what is "
                          "m̂ / √v̂ for each weight?")
    if not 0.18 <= later <= 0.28:
        hints = [(1.0, "the step-1 value: later, m̂ averages about 1/(1 - β1) = 10 noisy gradients whose signs "
                       "disagree, while √v̂ keeps their full size"),
                 (math.sqrt(1 - BETAS[0]), "√(1 - β1): the variance of m sums (1 - β1)² β1^(2k) over k, a geometric "
                                            "series - don't drop its denominator 1 - β1²"),
                 (1 - BETAS[0], "(1 - β1), the weight of one gradient in m: m̂'s noise is a sum of many such "
                                "terms, so its size is the square root of a sum of squares"),
                 ((1 - BETAS[0]) / (1 + BETAS[0]), "a variance: the update's RMS is its square root"),
                 (0.0, "0: the noise does not cancel completely in an exponential average of ~10 gradients")]
        for target, why in hints:
            if abs(later - target) <= max(0.1 * target, 0.01):
                raise CheckFailed(f"predicted_later_update = {later:g} looks like {why}")
        raise CheckFailed(f"predicted_later_update = {later:g}: how large is m̂ when it averages pure noise with "
                          "weights (1 - β1) β1^k, compared with √v̂?")
    return (f"you predicted {first:g} and {later:g}; the derivations give 1 (m̂ = g and v̂ = g² at step 1: every "
            f"weight moves by ±lr whatever the gradient's size) and √((1 - β1)/(1 + β1)) = {LATER:.3f}")


def _max_update(ratios, peak, w):
    """The largest update under lr_t = peak · min(1, t / (w + 1)), steps t from 1 (w = 0: no warm-up)."""
    return max(peak * min(1.0, t / (w + 1)) * r for t, r in enumerate(ratios, start=1))


def _off_by_one(got, needed):
    return (" - off by one? The task's schedule is lr_t = peak_lr · min(1, t / (w + 1)) for steps t = 1, 2, ..., "
            "so that w = 0 is no warm-up and w steps stay below the peak" if abs(got - needed) == 1 else "")


@exercise("09.warmup", points=2, uses="warmup_steps_needed", forbids=_ADAM)
def check_warmup(fn, rng):
    """The shortest linear warm-up that keeps every Adam update's RMS under a cap (and one step less does not)."""
    for i in range(5):
        steps, n = randint(rng, 40, 121), randint(rng, 20, 200)
        grads = _stream(rng, ["noise", "training", "noise", "training", "training"][i], steps, n)
        peak = 10 ** (-4 + 2 * float(torch.rand((), generator=rng)))
        ratios = adam_reference(grads, torch.ones(steps, dtype=torch.float64))   # updates in units of lr
        for _ in range(20):   # a cap whose answer lies inside the run, away from a tie
            target = 0 if i == 0 else randint(rng, 1, steps // 2)
            cap = _max_update(ratios, peak, target) * (1 + 1e-3)
            needed = next(w for w in range(steps + 1) if _max_update(ratios, peak, w) <= cap)
            if _max_update(ratios, peak, needed) <= cap * (1 - 1e-4) and (
                    needed == 0 or _max_update(ratios, peak, needed - 1) > cap * (1 + 1e-3)):
                break
        case = f"case {i}: {steps} steps of {n} gradients, peak_lr {peak:.3g}, max_update {cap:.4g}"
        got = call_learner(case, fn, grads.clone(), peak, cap)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, float) and got.is_integer():
            got = int(got)
        if not isinstance(got, int) or isinstance(got, bool) or got < 0:
            raise CheckFailed(f"[{case}] return a number of warm-up steps (an int ≥ 0), got {got!r}")
        worst = _max_update(ratios, peak, got)
        if worst > cap:
            t = max(range(1, steps + 1), key=lambda s: peak * min(1.0, s / (got + 1)) * ratios[s - 1])
            raise CheckFailed(f"[{case}] with warmup_steps = {got}, step {t}'s update has RMS {worst:.4g} > "
                              f"max_update{_off_by_one(got, needed)}")
        if got > 0 and _max_update(ratios, peak, got - 1) <= cap:
            raise CheckFailed(f"[{case}] warmup_steps = {got - 1} also keeps every update under max_update: return "
                              "the smallest number that does" + (
                                  " (0 here: the first update is already small enough)" if needed == 0 else "")
                              + _off_by_one(got, needed))


written("09.written", points=2, rubric=(
    "Adam's first steps are its largest relative to later ones: at step 1 the bias-corrected m̂ and v̂ are g and "
    "g², so every weight moves by about ±lr whatever the gradient's size (later, noisy gradients partly cancel "
    "in m̂: about 0.23 lr on pure noise); the lesson measured step 1 at 10-27x the typical later step",
    "Post-LN (BERT: LN(x + F(x))) routes every path through a LayerNorm and depends heavily on every branch, so "
    "those large early steps wreck it: at 6 layers and lr 3e-3 without warm-up its outputs collapse to one vector "
    "for every input and it never learns; warm-up keeps the early steps small and it trains",
    "Pre-LN (x + F(LN(x)), GPT-2 and later) keeps an identity path from input to output, so the same "
    "steps leave its outputs distinct: it trains without warm-up at that learning rate; BERT itself never moved "
    "(its checkpoints are Post-LN)",
    "It is not mainly a gradient explosion (Adam normalises the gradient's size away; Post-LN's gradients at "
    "init are only slightly larger here), and warm-up is not useless with Pre-LN: most Pre-LN models still use a "
    "short warm-up",
))
