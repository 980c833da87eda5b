"""Graded checks for lesson 01 (why divide QKᵀ by √d_k?), applied where the lesson did not go: the lesson
measured unit-variance queries and keys; here their components have variance σ² (activations that no
LayerNorm keeps at 1).

- 01.scale (predict): `score_scale(d_k, sigma)`, the factor that brings the variance of q·k back to 1 -
  a derivation, graded as a function on hidden d_k and σ; feedback names the known wrong formulas
  (σ ignored, σ instead of σ², 1/d_k, the standard deviation itself, ...).
- 01.score-variance (measure): `score_variance(d_k, sigma, n, generator)` measures var(q·k) over n
  independent pairs; checked against the derivation within a tolerance set by the sampling error (7
  standard errors), for reproducibility with the generator, and by the known wrong measurements.
- 01.conformance: bad arguments raise ValueError naming the argument.
- 01.top-weight (predict, then measure): `top_weight(d_k, n_keys, scale, sigma, n, generator)`, the mean
  largest softmax weight of a row; checked against a Monte-Carlo reference drawn by the check (the scores
  of one query are i.i.d. N(0, (scale·σ·‖q‖)²), ‖q‖² = σ²χ²_d), with a tolerance set by both sampling
  errors; the note shows the learner's prediction beside their measurement.
- 01.written: the interview answer, graded by a person.
"""
import math
import numbers
import re

import torch

from ..grader.authoring import (CheckFailed, call_learner, exercise, expect, expect_number, expect_value_error,
                       randint, written)


def _uniform(rng, low, high):
    return low + (high - low) * float(torch.rand((), generator=rng, dtype=torch.float64))


def _log_uniform(rng, low, high):
    return math.exp(_uniform(rng, math.log(low), math.log(high)))


def _sigma(rng):
    """A σ well away from 1 (so that σ, σ² and σ⁴ differ): in [0.25, 0.7] or [1.5, 4]."""
    return _log_uniform(rng, 0.25, 0.7) if float(torch.rand((), generator=rng)) < 0.5 else _log_uniform(rng, 1.5, 4.0)



# ---------------------------------------------------------------- Part A: the factor, derived

def scale_reference(d_k, sigma):
    return 1.0 / (sigma ** 2 * math.sqrt(d_k))


SCALE_MISTAKES = (
    (lambda d, s: 1 / math.sqrt(d), "1/√d_k, σ ignored: that is the unit-variance factor; here every product "
     "q_i·k_i has a larger (or smaller) variance, set by σ"),
    (lambda d, s: 1 / (s * math.sqrt(d)), "σ instead of σ²: q·k multiplies two components, each with standard "
     "deviation σ, so one product's standard deviation is σ·σ"),
    (lambda d, s: 1 / (s ** 4 * math.sqrt(d)), "σ⁴ in place of σ²: σ⁴ is one product's *variance*; the factor "
     "divides by a standard deviation"),
    (lambda d, s: 1 / d, "1/d_k: dividing by d_k over-corrects (the scores' variance falls like 1/d_k), and σ is "
     "ignored"),
    (lambda d, s: 1 / (s ** 2 * d), "dividing by d_k, not √d_k: the variance of q·k grows like d_k, so its "
     "standard deviation grows like √d_k"),
    (lambda d, s: 1 / (s ** 4 * d), "1 / var(q·k): the factor must divide by the standard deviation of q·k (the "
     "square root of its variance), not by its variance"),
    (lambda d, s: s ** 2 * math.sqrt(d), "the standard deviation of q·k itself: multiplying by it makes the spread "
     "worse - the factor is its inverse"),
    (lambda d, s: math.sqrt(d) / s ** 2, "√d_k / σ²: √d_k belongs in the denominator (the spread grows with d_k)"),
    (lambda d, s: 1 / (s ** 2 * math.sqrt(d)) ** 2, "the square of the factor: it scales the scores, whose "
     "*variance* then changes by its square"),
)


def _scale_case(fn, d_k, sigma):
    case = f"score_scale({d_k}, sigma={sigma:.4g})"
    return case, expect_number(case, call_learner(case, fn, d_k, sigma), "score_scale")


@exercise("01.scale", points=2, uses="score_scale")
def check_scale(fn, rng):
    """The factor that keeps var(scale · q·k) = 1 for components of variance σ², on hidden d_k and σ."""
    plan = [(64, 1.0), (64, 2.0), (256, 0.5), (9, 3.0)]
    plan += [(randint(rng, 2, 2049), _sigma(rng)) for _ in range(6)] + [(1, _sigma(rng))]
    for d_k, sigma in plan:
        case, got = _scale_case(fn, d_k, sigma)
        want = scale_reference(d_k, sigma)
        if abs(got - want) <= 1e-5 * want:
            continue
        # which wrong formula does it follow? compare on cases where σ, σ², σ⁴ and d_k all differ
        probes = [(d_k, sigma), (64, 2.0), (256, 0.5), (9, 3.0)]
        answers = [(d, s, _scale_case(fn, d, s)[1]) for d, s in probes]
        for formula, why in SCALE_MISTAKES:
            if all(abs(a - formula(d, s)) <= 1e-4 * abs(formula(d, s)) for d, s, a in answers):
                raise CheckFailed(f"[{case}] got {got:.6g}: this looks like {why}")
        if d_k == 64 and sigma == 1.0:
            raise CheckFailed(f"[{case}] got {got:.6g}: with unit-variance components (the lesson's setting) the "
                              "factor is the lesson's 1/√d_k")
        raise CheckFailed(f"[{case}] got {got:.6g}: with it the scaled scores have variance {(got / want) ** 2:.3g}, "
                          "not 1. q·k sums d_k products q_i·k_i - what is the variance of one product, of the sum, "
                          "and so the factor that brings it to 1?")
    return "the factor keeps the variance of the scores at 1 for every d_k and σ tried"


# ---------------------------------------------------------------- Part A: the variance, measured

def variance_reference(d_k, sigma):
    return d_k * sigma ** 4


def _relative_error(d_k, n):
    """The standard error of a sample variance of q·k over n pairs, relative to d_k σ⁴:
    var((q·k)²) = (2 d_k² + 6 d_k) σ⁸ for Gaussian components."""
    return math.sqrt((2 + 6 / d_k) / n)


VARIANCE_MISTAKES = (
    (lambda d, s: d * s ** 8, "components with standard deviation σ² (variance σ⁴): `torch.randn(...) * sigma` "
     "already has variance σ²"),
    (lambda d, s: d * s ** 2, "sigma taken as the components' variance: σ is their standard deviation"),
    (lambda d, s: s ** 4 / d, "a mean over the d_k components: the score q·k is their sum"),
    (lambda d, s: math.sqrt(d) * s ** 2, "a standard deviation: return the variance (its square)"),
    (lambda d, s: 1.0, "the variance of the *scaled* scores: measure the raw q·k, before any factor"),
)


def _variance(fn, case, d_k, sigma, n, seed):
    got = call_learner(case, fn, d_k, sigma, n, torch.Generator().manual_seed(seed))
    return expect_number(case, got, "score_variance")


@exercise("01.score-variance", points=2, uses=("score_variance", "score_scale"))
def check_score_variance(fn, scale_fn, rng):
    """var(q·k) measured over n independent pairs with the given generator, against the derivation within
    7 standard errors of the sampling; reproducible with the generator, not a formula."""
    seed = randint(rng, 0, 2 ** 30)
    case = f"score_variance(16, 1.0, 2000, generator seeded {seed}) twice"
    first, again = (_variance(fn, case, 16, 1.0, 2000, seed) for _ in range(2))
    expect(abs(first - again) <= 1e-9 * max(abs(first), 1e-12),
           f"[{case}] two calls with generators in the same state gave {first:.6g} and {again:.6g}: draw every "
           "random number with `generator=generator`, so that a measurement can be repeated")
    other = _variance(fn, f"score_variance(16, 1.0, 2000, generator seeded {seed + 1})", 16, 1.0, 2000, seed + 1)
    expect(first != other, f"[score_variance(16, 1.0, 2000) with generators seeded {seed} and {seed + 1}] both "
                           f"gave exactly {first:.6g}: measure the variance on random draws (a formula does not "
                           "fluctuate); the check compares it with the derivation")
    # small d_k first: there the n pairs must be independent (scores that share one q all carry its ‖q‖)
    plan = [(1, 2.0, 20000), (2, 0.5, 20000), (3, 1.0, 20000)]
    for _ in range(4):
        d_k = randint(rng, 1, 300)
        plan.append((d_k, _sigma(rng), max(2000, min(20000, 1_000_000 // d_k))))
    for d_k, sigma, n in plan:
        case = f"score_variance({d_k}, sigma={sigma:.4g}, n={n}, generator)"
        got = _variance(fn, case, d_k, sigma, n, randint(rng, 0, 2 ** 30))
        want = variance_reference(d_k, sigma)
        tol = 7 * _relative_error(d_k, n)
        if abs(got / want - 1) <= tol:
            continue
        # which wrong measurement does it follow? compare on cases where σ, σ², σ⁴, d_k and √d_k all differ
        probes = [(d_k, sigma, n, got), (64, 2.0, 15000, None), (9, 0.5, 20000, None)]
        probes = [(d, s, m, v if v is not None else _variance(fn, case, d, s, m, randint(rng, 0, 2 ** 30)))
                  for d, s, m, v in probes]
        for formula, why in VARIANCE_MISTAKES:
            if all(abs(v / formula(d, s) - 1) <= 7 * _relative_error(d, m) for d, s, m, v in probes):
                raise CheckFailed(f"[{case}] got {got:.4g}: this looks like {why}")
        raise CheckFailed(f"[{case}] got {got:.4g}, expected {want:.4g} within ±{tol * want:.2g} (7 standard errors "
                          f"of a sample variance over {n} pairs): draw n independent pairs, each with a fresh q and "
                          "k of d_k components with standard deviation sigma, and take the variance of the n "
                          "dot products")
    try:   # the note: the learner's factor applied to their own measurement
        d_k, sigma = 256, 2.0
        measured = _variance(fn, "note", d_k, sigma, 10000, 0)
        factor = expect_number("note", scale_fn(d_k, sigma), "score_scale")
        return (f"at d_k = {d_k}, σ = {sigma:g} you measured var(q·k) = {measured:.4g}; times your "
                f"score_scale({d_k}, {sigma:g})² that is {measured * factor ** 2:.3g} (1 is the goal)")
    except Exception:  # noqa: BLE001 - only a note
        return "the measured variances agree with the derivation"


@exercise("01.conformance", points=1, uses=("score_scale", "score_variance"))
def check_conformance(scale_fn, variance_fn, rng):
    """Arguments that make no sense raise ValueError naming the argument: d_k < 1, sigma <= 0, n < 2."""
    generator = torch.Generator().manual_seed(randint(rng, 0, 2 ** 30))
    calls = [
        ("score_scale(0, 1.0)", "d_k", lambda: scale_fn(0, 1.0)),
        ("score_scale(16, 0.0)", "sigma", lambda: scale_fn(16, 0.0)),
        ("score_scale(16, -2.0)", "sigma", lambda: scale_fn(16, -2.0)),
        ("score_variance(0, 1.0, 100, generator)", "d_k", lambda: variance_fn(0, 1.0, 100, generator)),
        ("score_variance(4, -1.0, 100, generator)", "sigma", lambda: variance_fn(4, -1.0, 100, generator)),
        ("score_variance(4, 1.0, 1, generator)", "n", lambda: variance_fn(4, 1.0, 1, generator)),
    ]
    for case, name, call in calls:
        error = expect_value_error(case, call, what=f" naming `{name}`", returned="it returned a result")
        expect(_names(str(error), name), f"[{case}] the ValueError should name the argument `{name}`, got: {error}")


def _names(message, name):
    """`name` appears in `message` as a word (d_k, not inside another identifier)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message) is not None


# ---------------------------------------------------------------- Part B: the largest softmax weight

N_REF = 12_000            # reference rows the check draws per case
PREDICTION = dict(d_k=256, n_keys=64, sigma=2.0)   # the prediction's setting, with the usual 1/√d_k


def top_weight_reference(rng, d_k, n_keys, scale, sigma, n_ref=N_REF):
    """(mean, standard deviation) of the largest softmax weight of a row, float64 Monte Carlo: given q the
    n_keys scores are i.i.d. N(0, (scale·σ·‖q‖)²), and ‖q‖² is σ² times a χ² with d_k degrees of freedom."""
    q_norm = torch.randn(n_ref, d_k, generator=rng).pow(2).sum(-1, dtype=torch.float64)   # ‖q‖² / σ²
    spread = scale * sigma * sigma * q_norm.sqrt()                            # (n_ref,)
    z = torch.randn(n_ref, n_keys, generator=rng, dtype=torch.float64) * spread[:, None]
    top = z.softmax(dim=-1).amax(dim=-1)
    return float(top.mean()), float(top.std())


def _top(fn, case, d_k, n_keys, scale, sigma, n, seed):
    got = call_learner(case, fn, d_k, n_keys, scale, sigma, n, torch.Generator().manual_seed(seed))
    got = expect_number(case, got, "top_weight")
    return got


@exercise("01.top-weight", points=2, uses=("top_weight", "predicted_top_weight"))
def check_top_weight(fn, predicted, rng):
    """The mean largest softmax weight of rows of n_keys scores scale·q·k_j, measured, against a Monte-Carlo
    reference within 6 standard errors of both samplings."""
    d, m, s = PREDICTION["d_k"], PREDICTION["n_keys"], PREDICTION["sigma"]
    plan = [(d, m, 1.0, 1.0), (d, m, 1 / math.sqrt(d), s), (16, 8, 1.0, 0.5)]
    for _ in range(3):
        plan.append((randint(rng, 1, 129), randint(rng, 2, 65), _log_uniform(rng, 0.02, 2.0), _sigma(rng)))
    n = 1000
    for d_k, n_keys, scale, sigma in plan:
        case = f"top_weight({d_k}, n_keys={n_keys}, scale={scale:.4g}, sigma={sigma:.4g}, n={n}, generator)"
        got = _top(fn, case, d_k, n_keys, scale, sigma, n, randint(rng, 0, 2 ** 30))
        mean, sd = top_weight_reference(rng, d_k, n_keys, scale, sigma)
        tol = 6 * max(sd, 1e-3) * math.sqrt(1 / n + 1 / N_REF) + 1e-6
        if abs(got - mean) <= tol:
            continue
        expect(1 / n_keys - 1e-6 <= got <= 1 + 1e-6,
               f"[{case}] got {got:.4g}: the largest of {n_keys} softmax weights lies between 1/{n_keys} and 1")
        alternatives = [
            ((d_k, n_keys, 1 / scale, sigma), "the scores divided by `scale`: `scale` multiplies them, "
                                              "softmax(scale · q·k)"),
            ((d_k, n_keys, scale, 1.0), "components of variance 1: σ ignored - scale them by sigma"),
            ((d_k, n_keys, scale, sigma ** 2), "components with standard deviation σ²: `torch.randn(...) * sigma` "
                                               "already has variance σ²"),
            ((d_k, n_keys, scale, math.sqrt(sigma)), "sigma taken as the components' variance: it is their "
                                                     "standard deviation"),
        ]
        if abs(got - 1 / n_keys) <= 1e-4 and mean - 1 / n_keys > tol:
            raise CheckFailed(f"[{case}] got {got:.4g} = 1/n_keys: that is the mean of all the weights (always "
                              "1/n_keys); take the largest weight of each row, then average over the rows")
        for args, why in alternatives:
            alt, alt_sd = top_weight_reference(rng, *args, n_ref=N_REF // 4)
            alt_tol = 6 * max(alt_sd, 1e-3) * math.sqrt(1 / n + 4 / N_REF) + 1e-6
            if abs(got - alt) <= alt_tol and abs(alt - mean) > 2 * tol:
                raise CheckFailed(f"[{case}] got {got:.4g}, expected {mean:.4g} ± {tol:.2g}: this looks like {why}")
        raise CheckFailed(f"[{case}] got {got:.4g}, expected {mean:.4g} ± {tol:.2g} (6 standard errors): each of "
                          "the n rows needs its own q and n_keys keys k_j, scores scale · q·k_j, the softmax over "
                          "the keys and its largest weight; return the mean over the rows")
    # the note: the prediction's setting, measured with the learner's function
    usual = _top(fn, "note", d, m, 1 / math.sqrt(d), s, n, 0)
    unit = _top(fn, "note", d, m, 1 / math.sqrt(d), 1.0, n, 0)
    right = _top(fn, "note", d, m, scale_reference(d, s), s, n, 0)
    said = (f"you predicted {float(predicted):.3g}" if isinstance(predicted, numbers.Real) and not isinstance(predicted, bool)
            else "no prediction recorded")
    return (f"{said}; at d_k = {d}, {m} keys, σ = {s:g} your measurement with the usual 1/√d_k gives {usual:.2f} "
            f"(σ = 1: {unit:.2f}; uniform would be {1 / m:.3f}), with Part A's factor for σ = {s:g} {right:.2f}")


written("01.written", points=2, rubric=(
    "q·k sums d_k products of independent components: with unit variance its variance is d_k, so the "
    "scores spread like √d_k; dividing by √d_k brings the variance back to 1 (σ_q²σ_k² in general)",
    "unscaled, large d_k saturates the softmax: one key takes almost all the weight (largest weight about "
    "0.95 of 64 at d_k = 1024)",
    "the cost is the gradient, not overflow: the softmax Jacobian diag(p) - ppᵀ is nearly zero for most "
    "queries, so the gradient reaching q and k is heavy-tailed (most queries starved, a few get large ones)",
    "dividing by d_k over-corrects: the softmax goes nearly uniform and the gradient shrinks with d_k",
    "the argument holds at initialisation (unit-variance inputs): training can move the variance, which is "
    "why some models add QK-norm",
))
