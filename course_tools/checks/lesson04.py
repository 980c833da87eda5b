"""Graded checks for lesson 04: FLOPs of cross-attention (queries and keys of different lengths) and of
generating tokens with and without a key/value cache, in FlopCounterMode's convention."""
import torch

from course_lib.attention import MultiHeadAttention
from course_lib.complexity import count_flops
from ..grading import CheckFailed, call_learner, exercise, expect, randint


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
    return guesses.get(got, "count Q and output projections on n_q tokens, K and V on n_kv, and QKᵀ, AV")


@exercise("04.cross-flops", points=2, uses="cross_attention_flops")
def check_cross(fn, rng):
    """Cross-attention FLOPs equal FlopCounterMode's count of MultiHeadAttention(query, memory, memory)."""
    sizes = [(3, 7, 8, 2), (1, 50, 16, 4)]           # the hint cases: n_q != n_kv, then one decoding step
    for _ in range(5):
        heads = randint(rng, 1, 5)
        sizes.append((randint(rng, 1, 200), randint(rng, 1, 200),
                      heads * randint(rng, 1, 17), heads))
    for n_q, n_kv, d, heads in sizes:
        query, memory = torch.randn(1, n_q, d, device="meta"), torch.randn(1, n_kv, d, device="meta")
        expected = count_flops(MultiHeadAttention(d, heads).to("meta"), query, memory, memory)
        call = f"cross_attention_flops({n_q}, {n_kv}, {d})"
        got = _call(call, fn, n_q, n_kv, d)
        expect(got == expected, f"[{call}] got {got:,}, but FlopCounterMode counts {expected:,} FLOPs for "
                                f"MultiHeadAttention({d}, {heads}) with {n_q} queries over {n_kv} memory tokens - "
                                f"{_cross_hint(got, n_q, n_kv, d)}")


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
    return guesses.get(got, "the prompt once (dense), then per new token its projections and its attention "
                            "over every token so far")


def _check_decode(fn, rng, kv_cache):
    plans = [(4, 3, 8), (1, 1, 2), (5, 0, 4)]
    for _ in range(4):
        plans.append(tuple(int(x) for x in torch.randint(1, 120, (3,), generator=rng)))
    for n_prompt, n_new, d in plans:
        call = f"decode_flops({n_prompt}, {n_new}, {d}, kv_cache={kv_cache})"
        got = _call(call, fn, n_prompt, n_new, d, kv_cache=kv_cache)
        expected = _decode(n_prompt, n_new, d, kv_cache)
        expect(got == expected, f"[{call}] got {got:,}, expected {expected:,} - "
                                f"{_decode_hint(got, n_prompt, n_new, d, kv_cache)}")


@exercise("04.decode-cached", points=2, uses="decode_flops")
def check_decode_cached(fn, rng):
    """Generation with a key/value cache: the prompt once, then one token's projections and attention per step."""
    _check_decode(fn, rng, True)


@exercise("04.decode-uncached", points=1, uses="decode_flops")
def check_decode_uncached(fn, rng):
    """Generation without a cache: every step re-runs the layer on the whole sequence so far."""
    _check_decode(fn, rng, False)
