"""Graded checks for lesson 11: causal self-attention with a key/value cache (incremental decoding), and
where one parallel pass agrees with generation (the per-position gap, under any mask). The references are
written here from the definition, in float64; `course_lib`'s MultiHeadAttention only holds the weights."""
import copy
import math

import torch

from course_lib.attention import MultiHeadAttention

from ..grader.authoring import CheckFailed, call_learner, exercise, expect, expect_close, expect_tuple, randint, written


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


def _tolerance(dtype, expected):
    """Float32 rounding grows with the values' size (the "large inputs" cases reach |out| ~ 100): the
    official solution's worst relative error against the float64 reference was 5.5e-5 over 9,600 steps."""
    return (5e-4 if dtype == torch.float32 else 1e-8) * max(1.0, float(expected.abs().max()))


def _compare(case, got, attn, attn64, x_new, cache, dtype):
    """got = the learner's (out, (k, v)); compared with the float64 reference, naming a known mistake."""
    cache64 = None if cache is None else tuple(c.double() for c in cache)
    expected_out, (ek, ev) = reference_step(attn64, x_new.double(), cache64)
    out, new_cache = expect_tuple(case, got, ("out", "(k, v)"), lists=True)
    tol = _tolerance(dtype, expected_out)
    if torch.is_tensor(out) and out.shape == expected_out.shape and not torch.isnan(out).any() \
            and not torch.allclose(out.double(), expected_out, atol=tol, rtol=0):
        for variant, hint in _HINTS.items():
            wrong = reference_step(attn64, x_new.double(), cache64, variant)[0]
            if torch.allclose(out.double(), wrong, atol=tol, rtol=0) and not torch.allclose(wrong, expected_out, atol=tol):
                raise CheckFailed(f"[{case}] your output differs from the full causal pass and matches a known "
                                  f"mistake: {hint}")
    expect_close(case, out, expected_out, atol=tol, rtol=0, name="out")
    expect(isinstance(new_cache, (tuple, list)) and len(new_cache) == 2,
           f"[{case}] the second value should be the extended cache (k, v), got {type(new_cache).__name__}")
    for name, got_t, want in (("cache k", new_cache[0], ek), ("cache v", new_cache[1], ev)):
        if torch.is_tensor(got_t) and tuple(got_t.shape) != tuple(want.shape):
            raise CheckFailed(f"[{case}] {name} has shape {tuple(got_t.shape)}, expected {tuple(want.shape)} = "
                              "(B, n_heads, t + n, head_dim): the old cache extended along the positions (dim 2)")
        expect_close(case, got_t, want, atol=_tolerance(dtype, want), rtol=0, name=name)
    return new_cache


def _sequence(fn, rng, dtype, sizes, label, scale=1.0, own_cache=True, empty_cache=False):
    """Feed a random sequence in pieces of `sizes`; compare with the reference at every call."""
    n_heads = randint(rng, 1, 5)
    d_model = n_heads * randint(rng, 1, 7)
    B = randint(rng, 1, 4)
    attn = _attention(rng, d_model, n_heads, dtype)
    attn64 = copy.deepcopy(attn).double()
    x = torch.randn(B, sum(sizes), d_model, generator=rng, dtype=dtype) * scale
    with torch.no_grad():
        full = attn64(x.double(), x.double(), x.double(),
                      mask=torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril())[0]
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
            ref_cache = tuple(c.to(dtype) for c in reference_step(attn64, x[:, :start].double())[1]) if start else cache
            given = cache if (own_cache or start == 0) else ref_cache
            got = call_learner(case, fn, attn, x_new.clone(), None if given is None else tuple(c.clone() for c in given))
            cache = _compare(case, got, attn, attn64, x_new, given, dtype)
            expect_close(case + " (vs the full causal pass)", got[0], full[:, start:start + n],
                         atol=_tolerance(dtype, full), rtol=0, name="out")
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


# ---------------------------------------------------------------- 11.stepwise-gap: predict, then measure

def gap_reference(attn, x, mask=None, variant="right"):
    """(T,) max |parallel output at t - output at t when only positions 0..t exist|, and wrong variants."""
    T = x.shape[1]
    full = attn(x, x, x, mask=mask)[0]                                         # (B, T, d)
    gaps = []
    for t in range(T):
        prefix = x[:, :t + 1]
        sub = None if mask is None else (mask[T - t - 1:, T - t - 1:] if variant == "mask-bottom-right"
                                         else mask[:t + 1, :t + 1])
        alone = attn(prefix, prefix, prefix, mask=sub)[0]                      # (B, t + 1, d)
        diff = (full[:, t] - alone[:, 0 if variant == "first-position" else t]).abs()
        gaps.append(diff.mean() if variant == "mean" else diff.max())
    return torch.stack(gaps)


_GAP_HINTS = {
    "first-position": "you compared position t of the parallel pass with position 0 of the prefix pass: at "
                      "generation time position t is the *last* of the t + 1 positions that exist",
    "mask-bottom-right": "the prefix's mask is the mask's bottom-right corner; at generation time positions "
                         "0..t exist, so restrict the mask to its first t + 1 rows and columns",
    "mean": "that is the mean |difference|; the task asks for the largest |difference| over the batch and features",
}


def _masks(T, rng):
    """(label, mask) cases: no mask, causal, a causal sliding window, a prefix-LM mask, anti-causal, random."""
    P = randint(rng, 2, T)
    W = randint(rng, 1, T)
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    return [("no mask", None),
            ("the causal mask", j <= i),
            (f"a causal sliding window of {W + 1} positions", (j <= i) & (j >= i - W)),
            (f"a prefix-LM mask (the first {P} positions see each other, the rest causal)", (j <= i) | (j < P)),
            ("an anti-causal mask (each position sees itself and the positions after it)", j >= i),
            ("a random mask (every position sees itself)", (torch.rand(T, T, generator=rng) < 0.5) | (i == j))]


@exercise("11.stepwise-gap", points=2, uses=("stepwise_gap", "predicted_agreeing_positions"),
          forbids=("torch.nn.functional:multi_head_attention_forward", "torch.nn:MultiheadAttention"))
def check_stepwise_gap(fn, predicted, rng):
    """Per position: the parallel pass vs generation time, under several masks (float64)."""
    zero_without_mask = None
    for trial in range(3):
        n_heads = randint(rng, 1, 4)
        d_model = n_heads * randint(rng, 2, 6)
        B, T = randint(rng, 1, 4), randint(rng, 4, 9)
        attn = _attention(rng, d_model, n_heads, torch.float64)
        x = torch.randn(B, T, d_model, generator=rng, dtype=torch.float64)
        for label, mask in _masks(T, rng):
            case = f"trial {trial}: B={B}, T={T}, d_model={d_model}, n_heads={n_heads}, {label}"
            with torch.no_grad():
                expected = gap_reference(attn, x, mask)
                got = call_learner(case, fn, attn, x.clone(), None if mask is None else mask.clone())
            if isinstance(got, (list, tuple)) and all(isinstance(v, (int, float)) or torch.is_tensor(v) for v in got):
                got = torch.tensor([float(v) for v in got], dtype=torch.float64)
            expect(torch.is_tensor(got), f"[{case}] return a tensor of T = {T} gaps, got {type(got).__name__}")
            got = got.detach().reshape(-1) if got.numel() == T else got
            tol = 1e-9 * max(1.0, float(expected.abs().max()))
            if tuple(got.shape) == (T,) and not torch.allclose(got.double(), expected, atol=tol, rtol=1e-6):
                for variant, hint in _GAP_HINTS.items():
                    with torch.no_grad():
                        wrong = gap_reference(attn, x, mask, variant)
                    if torch.allclose(got.double(), wrong, atol=tol, rtol=1e-6) \
                            and not torch.allclose(wrong, expected, atol=tol, rtol=1e-6):
                        raise CheckFailed(f"[{case}] gaps {[round(v, 4) for v in got.tolist()]}, expected "
                                          f"{[round(v, 4) for v in expected.tolist()]}: {hint}")
            expect_close(case, got, expected, atol=tol, rtol=1e-6, name="the gaps")
            if mask is None and zero_without_mask is None:
                zero_without_mask = ([t for t in range(T) if float(got[t]) <= tol], T)
    positions, T = zero_without_mask
    where = ("no position" if not positions else "every position" if len(positions) == T
             else "only the first" if positions == [0] else "only the last" if positions == [T - 1]
             else "positions " + ", ".join(map(str, positions)))
    said = ("you made no prediction" if predicted is None or predicted is Ellipsis
            else f"you predicted {predicted!r}")
    return f"{said}; your measurement without a mask (T = {T}): the gap is 0 at {where}"


written("11.written", points=2, rubric=(
    "the encoder runs once over the whole source with unmasked self-attention (only padding masked) and "
    "produces the memory; each decoder layer has masked self-attention, cross-attention (queries from the "
    "decoder, keys and values from the encoder's last layer) and the feed-forward network",
    "the causal mask lets position t see positions <= t only, so teacher forcing computes the whole target "
    "in one parallel pass and still gets, at every position, exactly what step-by-step generation computes "
    "(measured: a future token moves earlier outputs by exactly 0; parallel = step by step to float rounding)",
    "without the mask training learns a shortcut that does not exist at generation time: the leaky model is "
    "almost perfect teacher-forced and gets almost no sequence right when it generates",
    "causality is also what makes a key/value cache valid: past keys and values never change, so decoding "
    "computes only the new positions (with the mask's diagonal offset inside a chunk)",
))
