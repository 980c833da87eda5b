"""Graded checks for lesson 11: causal self-attention with a key/value cache (incremental decoding).
The reference is written here from the definition; `course_lib`'s MultiHeadAttention only holds the weights."""
import math

import torch

from course_lib.attention import MultiHeadAttention

from ..grading import CheckFailed, exercise, expect, expect_close, expect_tuple, randint


def _heads(attn, t):
    B, n, _ = t.shape
    return t.reshape(B, n, attn.n_heads, -1).transpose(1, 2)


def reference_step(attn, x_new, cache=None, variant="right"):
    """The reference (variant "right") and known wrong variants, for the feedback."""
    B, n, _ = x_new.shape
    q, k, v = (_heads(attn, p(x_new)) for p in (attn.q_proj, attn.k_proj, attn.v_proj))
    if cache is not None:
        k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
    t = k.shape[2] - n
    scale = math.sqrt(attn.d_model if variant == "scale-d-model" else q.shape[-1])
    scores = q @ k.transpose(-2, -1) / (1.0 if variant == "no-scale" else scale)
    key, query = torch.arange(t + n), torch.arange(t, t + n)[:, None]
    if variant == "top-left-causal":
        query = torch.arange(n)[:, None]
    if variant != "no-mask-in-chunk":
        scores = scores.masked_fill(key > query, float("-inf"))
    out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, n, -1)
    return attn.out_proj(out), (k, v)


_HINTS = {"no-scale": "the scores are not divided by sqrt(head_dim)",
          "scale-d-model": "the scores are divided by sqrt(d_model); scale by sqrt(head_dim) = sqrt(d_model // n_heads)",
          "no-mask-in-chunk": "inside a chunk of new positions there is no causal mask: new position t + i must not "
                              "see the new positions after it",
          "top-left-causal": "the causal mask inside the chunk is a square tril aligned at the top-left "
                             "(is_causal=True style): with t cached positions, new position t + i sees keys 0 .. t + i"}


def _attention(rng, d_model, n_heads, dtype):
    torch.manual_seed(randint(rng, 0, 2**31 - 1))
    attn = MultiHeadAttention(d_model, n_heads).to(dtype).eval()
    with torch.no_grad():
        for p in attn.parameters():
            p.copy_(torch.randn(p.shape, generator=rng, dtype=dtype) / math.sqrt(d_model))
    return attn


def _compare(case, got, attn, x_new, cache, dtype):
    """got = the learner's (out, (k, v)); compared with the reference, naming a known mistake."""
    expected_out, (ek, ev) = reference_step(attn, x_new, cache)
    out, new_cache = expect_tuple(case, got, ("out", "(k, v)"), lists=True)
    # float32 rounding grows with the values' size (the "large inputs" cases reach |out| ~ 30)
    tol = (1e-9 if dtype == torch.float64 else 2e-5) * max(1.0, float(expected_out.abs().max()))
    if torch.is_tensor(out) and out.shape == expected_out.shape and not torch.isnan(out).any() \
            and not torch.allclose(out.to(dtype), expected_out, atol=tol, rtol=1e-4):
        for variant, hint in _HINTS.items():
            wrong = reference_step(attn, x_new, cache, variant)[0]
            if torch.allclose(out.to(dtype), wrong, atol=tol, rtol=1e-4) and not torch.allclose(wrong, expected_out, atol=tol):
                raise CheckFailed(f"[{case}] your output differs from the full causal pass and matches a known "
                                  f"mistake: {hint}")
    expect_close(case, out, expected_out, atol=tol, rtol=1e-4, name="out")
    expect(isinstance(new_cache, (tuple, list)) and len(new_cache) == 2,
           f"[{case}] the second value should be the extended cache (k, v), got {type(new_cache).__name__}")
    for name, got_t, want in (("cache k", new_cache[0], ek), ("cache v", new_cache[1], ev)):
        if torch.is_tensor(got_t) and tuple(got_t.shape) != tuple(want.shape):
            raise CheckFailed(f"[{case}] {name} has shape {tuple(got_t.shape)}, expected {tuple(want.shape)} = "
                              "(B, n_heads, t + n, head_dim): the old cache extended along the positions (dim 2)")
        expect_close(case, got_t, want, atol=tol, rtol=1e-4, name=name)
    return new_cache


def _sequence(fn, rng, dtype, sizes, label, scale=1.0, own_cache=True, empty_cache=False):
    """Feed a random sequence in pieces of `sizes`; compare with the reference at every call."""
    n_heads = randint(rng, 1, 5)
    d_model = n_heads * randint(rng, 1, 7)
    B = randint(rng, 1, 4)
    attn = _attention(rng, d_model, n_heads, dtype)
    x = torch.randn(B, sum(sizes), d_model, generator=rng, dtype=dtype) * scale
    with torch.no_grad():
        full = attn(x, x, x, mask=torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril())[0]
    cache = None
    if empty_cache:
        head_dim = d_model // n_heads
        cache = (torch.zeros(B, n_heads, 0, head_dim, dtype=dtype), torch.zeros(B, n_heads, 0, head_dim, dtype=dtype))
    start = 0
    for n in sizes:
        x_new = x[:, start:start + n]
        case = (f"{label}: B={B}, d_model={d_model}, n_heads={n_heads}, {dtype}, new positions {start}..{start + n - 1} "
                f"(n={n}) after t={start} cached" + (f", inputs x {scale:g}" if scale != 1 else "")
                + ("" if own_cache or start == 0 else ", cache built by the grader"))
        with torch.no_grad():
            ref_cache = reference_step(attn, x[:, :start])[1] if start else cache
            given = cache if (own_cache or start == 0) else ref_cache
            got = fn(attn, x_new.clone(), None if given is None else tuple(c.clone() for c in given))
            cache = _compare(case, got, attn, x_new, given, dtype)
            expect_close(case + " (vs the full causal pass)", got[0], full[:, start:start + n],
                         atol=(1e-9 if dtype == torch.float64 else 2e-5) * max(1.0, float(full.abs().max())),
                         rtol=1e-4, name="out")
        start += n


@exercise("11.kv-cache-step", points=2, uses="cached_self_attention",
          forbids=("torch.nn.functional:multi_head_attention_forward", "torch.nn:MultiheadAttention"))
def check_step(fn, rng):
    """Token by token from an empty cache: every output and the growing cache."""
    _sequence(fn, rng, torch.float32, [1] * 6, "token by token from cache=None")
    _sequence(fn, rng, torch.float64, [1] * 5, "token by token, grader's caches", own_cache=False)
    _sequence(fn, rng, torch.float32, [1] * 3, "token by token from an empty cache (t = 0)", empty_cache=True)
    _sequence(fn, rng, torch.float32, [1] * 4, "large inputs", scale=30.0)
    for _ in range(2):
        _sequence(fn, rng, torch.float32, [1] * randint(rng, 2, 10), "random length")


@exercise("11.kv-cache-chunk", points=1, uses="cached_self_attention",
          forbids=("torch.nn.functional:multi_head_attention_forward", "torch.nn:MultiheadAttention"))
def check_chunk(fn, rng):
    """A prefill and chunks of several new positions: the causal mask inside a chunk, offset by t."""
    _sequence(fn, rng, torch.float32, [3, 2, 3], "prefill 3, then chunks of 2 and 3")
    _sequence(fn, rng, torch.float64, [2, 3, 1, 4], "chunks, grader's caches", own_cache=False)
    _sequence(fn, rng, torch.float32, [4, 3], "prefill into an empty cache (t = 0), then a chunk", empty_cache=True)
    _sequence(fn, rng, torch.float32, [5, 2], "large inputs", scale=30.0)
    for _ in range(2):
        _sequence(fn, rng, torch.float32, [randint(rng, 1, 6) for _ in range(randint(rng, 2, 5))], "random chunks")
