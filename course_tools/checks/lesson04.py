"""Graded checks for lesson 04 (what is the time complexity of self-attention?), applied where the
lesson did not go: FLOPs of cross-attention (queries and keys of different lengths) and of generating
tokens with and without a key/value cache, in FlopCounterMode's convention; and the predicted growth
of generation's cost (a derivation: graded).

A wrong count is first compared with the known slips; otherwise the learner's function is evaluated on
a grid of small sizes, fitted term by term (n_q·d², n_kv·d², n_q·n_kv·d, ...), and the feedback names the
terms that differ from the counter's - without printing the closed form."""
import math

import numpy as np
import torch

from course_lib.attention import MultiHeadAttention
from course_lib.complexity import count_flops
from ..grader.authoring import CheckFailed, call_learner, exercise, expect, randint, written


def _as_int(case: str, got) -> int:
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        raise CheckFailed(f"[{case}] return a number (an int), got {type(got).__name__}")
    if got != int(got):
        raise CheckFailed(f"[{case}] a FLOP count is a whole number, got {got}")
    return int(got)


def _call(case, fn, *args, **kwargs):
    return _as_int(case, call_learner(case, fn, *args, **kwargs))


def fit_terms(fn, points, terms):
    """Coefficients of fn over `terms` ({name: f(point) -> number}) from its values at `points`, or None
    when fn is not such a polynomial (or raises)."""
    try:
        values = np.array([float(fn(*p)) for p in points])
    except Exception:  # noqa: BLE001 - only a diagnosis
        return None
    basis = np.array([[f(*p) for f in terms.values()] for p in points], dtype=float)
    coef, *_ = np.linalg.lstsq(basis, values, rcond=None)
    coef = np.round(coef * 2) / 2                                   # counts are whole (or half) numbers
    if np.abs(basis @ coef - values).max() > 1e-6 * max(1.0, np.abs(values).max()):
        return None
    return dict(zip(terms, coef.tolist()))


def term_report(got: dict | None, want: dict, meaning: dict) -> str:
    """A sentence on the terms where `got` differs from `want` ({} when they agree)."""
    if got is None:
        return ""
    said = []
    for name, value in got.items():
        expected = want.get(name, 0.0)
        if value == expected:
            continue
        what = meaning.get(name, "a term the counter does not have")
        if expected == 0:
            said.append(f"your count has a term in {name} ({what})")
        elif value == 0:
            said.append(f"your count has no term in {name} ({what})")
        else:
            said.append(f"your term in {name} ({what}) is {value / expected:g}x the counter's")
    return "; ".join(said)


CROSS_TERMS = {"n_q·d²": lambda q, k, d: q * d * d, "n_kv·d²": lambda q, k, d: k * d * d,
               "n_q·n_kv·d": lambda q, k, d: q * k * d, "n_q²·d": lambda q, k, d: q * q * d,
               "n_kv²·d": lambda q, k, d: k * k * d, "n_q·d": lambda q, k, d: q * d, "n_kv·d": lambda q, k, d: k * d,
               "d²": lambda q, k, d: d * d, "d": lambda q, k, d: d, "n_q": lambda q, k, d: q,
               "n_kv": lambda q, k, d: k, "n_q·n_kv": lambda q, k, d: q * k, "constant": lambda q, k, d: 1}
CROSS_MEANING = {"n_q·d²": "what acts on each of the n_q query tokens", "n_kv·d²": "what acts on each of the n_kv "
                 "memory tokens", "n_q·n_kv·d": "the products between queries and memory",
                 "n_q²·d": "queries against queries: the scores are (n_q, n_kv)",
                 "n_kv²·d": "memory against memory: the scores are (n_q, n_kv)"}
# measuring with the counter inside the answer is not counting (count_flops and attention_flops: shortcuts.py)
COUNTER = ("torch.utils.flop_counter:FlopCounterMode",)
CROSS_POINTS = [(q, k, d) for q in (1, 2, 3, 5) for k in (1, 2, 4, 7) for d in (2, 3, 5, 8)]


def _cross(n_q, n_kv, d):
    return 4 * n_q * d * d + 4 * n_kv * d * d + 4 * n_q * n_kv * d


def _cross_hint(got, n_q, n_kv, d):
    expected = _cross(n_q, n_kv, d)
    guesses = {
        expected // 2: "half the count: FlopCounterMode counts 2 FLOPs per multiply-add",
        8 * n_q * d * d + 4 * n_q * n_kv * d: "all four projections over the n_q queries: K and V project the "
                                              "n_kv memory tokens",
        8 * n_kv * d * d + 4 * n_q * n_kv * d: "all four projections over the n_kv memory tokens: Q and the "
                                               "output projection act on the n_q queries",
        8 * n_q * d * d + 4 * n_q * n_q * d: "the self-attention formula on n_q tokens: the scores are (n_q, n_kv)",
        4 * n_q * d * d + 4 * n_kv * d * d + 2 * n_q * n_kv * d: "only one of QKᵀ and AV counted",
    }
    return guesses.get(got)


def _cross_terms(fn):
    """The term-by-term diagnosis of a learner's cross_attention_flops."""
    want = {"n_q·d²": 4.0, "n_kv·d²": 4.0, "n_q·n_kv·d": 4.0}
    return term_report(fit_terms(fn, CROSS_POINTS, CROSS_TERMS), want, CROSS_MEANING)


@exercise("04.cross-flops", points=2, uses="cross_attention_flops", forbids=COUNTER)
def check_cross(fn, rng):
    """Cross-attention FLOPs equal FlopCounterMode's count of MultiHeadAttention(query, memory, memory)."""
    sizes = [(3, 7, 8, 2), (1, 50, 16, 4)]           # n_q != n_kv, then one decoding step
    for _ in range(5):
        heads = randint(rng, 1, 5)
        sizes.append((randint(rng, 1, 200), randint(rng, 1, 200),
                      heads * randint(rng, 1, 17), heads))
    for n_q, n_kv, d, heads in sizes:
        query, memory = torch.randn(1, n_q, d, device="meta"), torch.randn(1, n_kv, d, device="meta")
        expected = count_flops(MultiHeadAttention(d, heads).to("meta"), query, memory, memory)
        call = f"cross_attention_flops({n_q}, {n_kv}, {d})"
        got = _call(call, fn, n_q, n_kv, d)
        if got == expected:
            continue
        said = (f"[{call}] got {got:,}, but FlopCounterMode counts {expected:,} FLOPs for MultiHeadAttention("
                f"{d}, {heads}) with {n_q} queries over {n_kv} memory tokens")
        why = _cross_hint(got, n_q, n_kv, d) or _cross_terms(fn)
        raise CheckFailed(f"{said} - {why}" if why else f"{said}; count it with `count_flops` on the meta "
                          "device at a few sizes and see which part of yours moves differently")


def _decode(n_prompt, n_new, d, kv_cache):
    total = 8 * n_prompt * d * d + 4 * n_prompt * n_prompt * d
    for length in range(n_prompt + 1, n_prompt + n_new + 1):
        total += 8 * d * d + 4 * length * d if kv_cache else 8 * length * d * d + 4 * length * length * d
    return total


def _decode_hint(got, n_prompt, n_new, d, kv_cache):
    prompt = 8 * n_prompt * d * d + 4 * n_prompt * n_prompt * d
    guesses = {
        _decode(n_prompt, n_new, d, kv_cache) - prompt: "the prompt's own pass is missing",
        _decode(n_prompt - 1, n_new, d, kv_cache) - _decode(n_prompt - 1, 0, d, kv_cache) + prompt:
            "off by one: the new token attends to every earlier token *and itself*",
        _decode(n_prompt, n_new, d, not kv_cache): ("that is the count without a cache" if kv_cache else
                                                   "that is the count with a cache: without one every step re-runs "
                                                   "the layer on the whole sequence"),
        _decode(n_prompt, n_new, d, kv_cache) // 2: "half the count: 2 FLOPs per multiply-add",
    }
    if kv_cache:
        guesses[prompt + sum(8 * d * d + 4 * L * d * d + 4 * L * d for L in range(n_prompt + 1, n_prompt + n_new + 1))] = \
            "with a cache, K and V of earlier tokens are not projected again: only the new token's"
    return guesses.get(got)


PROMPT_TERMS = {"n·d²": lambda n, d: n * d * d, "n²·d": lambda n, d: n * n * d, "n·d": lambda n, d: n * d,
                "d²": lambda n, d: d * d, "d": lambda n, d: d, "n": lambda n, d: n, "n²": lambda n, d: n * n,
                "constant": lambda n, d: 1}
STEP_TERMS = {"d²": lambda L, d: d * d, "L·d²": lambda L, d: L * d * d, "L·d": lambda L, d: L * d,
              "L²·d": lambda L, d: L * L * d, "d": lambda L, d: d, "L": lambda L, d: L, "L²": lambda L, d: L * L,
              "constant": lambda L, d: 1}
STEP_MEANING = {"d²": "what the new token costs whatever the context", "L·d²": "projections of every token so far",
                "L·d": "the new token against the L tokens so far", "L²·d": "every token against every token",
                "d": "a constant number of d-wide products per step: attending to one token more or fewer?"}


def _decode_terms(fn, kv_cache):
    """The term-by-term diagnosis of a learner's decode_flops: the prompt alone, then one step at length L."""
    prompt = fit_terms(lambda n, d: fn(n, 0, d, kv_cache=kv_cache),
                       [(n, d) for n in (1, 2, 3, 5, 6) for d in (2, 3, 5, 7)], PROMPT_TERMS)
    said = term_report(prompt, {"n·d²": 8.0, "n²·d": 4.0}, {
        "n·d²": "the prompt's projections", "n²·d": "the prompt's attention, every token against every token"})
    if said:
        return "with n_new = 0 (the prompt alone) " + said
    points = [(p, m, d) for p in (1, 2, 4) for m in (1, 2, 3) for d in (2, 3, 5, 7)]

    def step(p, m, d):   # the cost of the step that makes the sequence p + m tokens long
        return fn(p, m, d, kv_cache=kv_cache) - fn(p, m - 1, d, kv_cache=kv_cache)

    fitted = fit_terms(lambda p, m, d: step(p, m, d), points,
                       {name: (lambda f: lambda p, m, d: f(p + m, d))(f) for name, f in STEP_TERMS.items()})
    want = {"d²": 8.0, "L·d": 4.0} if kv_cache else {"L·d²": 8.0, "L²·d": 4.0}
    said = term_report(fitted, want, STEP_MEANING)
    return f"one generation step at sequence length L: {said}" if said else ""


def _check_decode(fn, rng, kv_cache):
    plans = [(4, 3, 8), (1, 1, 2), (5, 0, 4)]
    for _ in range(4):
        plans.append(tuple(int(x) for x in torch.randint(1, 120, (3,), generator=rng)))
    for n_prompt, n_new, d in plans:
        call = f"decode_flops({n_prompt}, {n_new}, {d}, kv_cache={kv_cache})"
        got = _call(call, fn, n_prompt, n_new, d, kv_cache=kv_cache)
        expected = _decode(n_prompt, n_new, d, kv_cache)
        if got == expected:
            continue
        said = f"[{call}] got {got:,}, expected {expected:,}"
        why = _decode_hint(got, n_prompt, n_new, d, kv_cache) or _decode_terms(fn, kv_cache)
        raise CheckFailed(f"{said} - {why}" if why else f"{said}; try n_new = 0, 1, 2 and compare your counts "
                          "step by step with what each step computes")


@exercise("04.decode-cached", points=2, uses="decode_flops", forbids=COUNTER)
def check_decode_cached(fn, rng):
    """Generation with a key/value cache: the prompt once, then one token's projections and attention per step."""
    _check_decode(fn, rng, True)


@exercise("04.decode-uncached", points=1, uses="decode_flops", forbids=COUNTER)
def check_decode_uncached(fn, rng):
    """Generation without a cache: every step re-runs the layer on the whole sequence so far."""
    _check_decode(fn, rng, False)


# ---------------------------------------------------------------- the predicted growth of generation

def _growth(kv_cache, n=2000, d=16):
    """The local exponent of the total generation FLOPs in n_new, one-token prompt, from n to 2n."""
    return math.log2(_decode(1, 2 * n, d, kv_cache) / _decode(1, n, d, kv_cache))


@exercise("04.predict-growth", points=1, uses=("predicted_exponent_cached", "predicted_exponent_uncached"))
def check_predict_growth(cached, uncached, rng=None):
    """How the total FLOPs of a long generation grow with n_new, with and without a cache (a derivation)."""
    case = "your prediction"
    values = []
    for name, got in (("predicted_exponent_cached", cached), ("predicted_exponent_uncached", uncached)):
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        expect(isinstance(got, (int, float)) and not isinstance(got, bool) and math.isfinite(got),
               f"[{case}] {name} should be a number, got {type(got).__name__}")
        values.append(float(got))
    cached, uncached = values
    beside = (f"you predicted n_new^{cached:g} with a cache and n_new^{uncached:g} without; the counts grow as "
              f"n_new^{_growth(True):.2f} and n_new^{_growth(False):.2f} from 2,000 to 4,000 new tokens at d = 16")
    if abs(cached - 2) <= 0.05 and abs(uncached - 3) <= 0.05:
        return beside
    if abs(cached - 1) <= 0.05 and abs(uncached - 2) <= 0.05:
        why = ("those are one step's exponents (one query against L keys; L queries against L keys): the total "
               "adds up n_new such steps")
    elif abs(cached - 2) <= 0.05:
        why = ("without a cache every step runs the whole layer again: how does one such step's cost grow with "
               "its length L, and what does adding up n_new of them give?")
    elif abs(uncached - 3) <= 0.05:
        why = ("with a cache one step is one new query against the L cached keys and values: how does that grow "
               "with L, and what does adding up n_new steps give?")
    else:
        why = ("the total is a sum over n_new steps, and a sum of L^k for L up to N grows like N^(k+1): which "
               "power of L does one step cost, with and without the cache?")
    raise CheckFailed(f"[{case}] {beside} - {why}")


written("04.written", points=2, rubric=(
    "QKᵀ multiplies (n, d) by (d, n) and the weights (n, n) multiply V (n, d): n²·d multiply-adds each, "
    "O(n²·d) (4n²d FLOPs), whatever the number of heads",
    "the four projections add 8n·d², linear in n: for short sequences (n below about 2d) they dominate, so "
    "the full layer's exponent in n moves from about 1 towards 2",
    "compared with an RNN (O(n·d²)) and a convolution (O(k·n·d²)), attention's mixing is cheaper exactly when "
    "n < d",
    "what attention buys is not FLOPs but parallelism and short paths: O(1) sequential operations and a "
    "maximum path length of 1, against n for the RNN",
    "memory for the n×n weights also grows as n²; in generation a KV cache makes each step O(L·d) instead "
    "of recomputing the whole layer",
))
