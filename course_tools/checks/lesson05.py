"""Graded checks for lesson 05 (sinusoidal or learned positions, and why does BERT stop at 512 tokens?):
rotary position embeddings (RoPE), the lesson's frequencies used to rotate queries and keys, checked by
the properties that make them RoPE (so every pairing and direction passes); and, predicted first, what
an attention layer knows about order and absolute position with no positions, an absolute table (what
BERT's 512-row table is) and RoPE.

A learner's rotation is read off as a matrix per position, M_p (apply it to unit vectors): the checks
test M_0 = I, M_p orthogonal (norms kept), M_aᵀ M_b depending on b - a only (scores depend on the offset),
and the eigenvalues of M_p (cos p·ω_i, each twice) - a property of the map, whatever features form the
pairs and whichever way they turn. Feedback compares a wrong spectrum with the known wrong frequencies."""
import math

import torch

from ..grader.authoring import (CheckFailed, call_learner, exercise, expect, expect_shape, expect_value_error, randint,
                       written)


def frequencies(d, base=10000.0, *, variant=""):
    """ω_i = base^(-2i/d), one per pair, float64; `variant` names a known wrong one."""
    two_i = torch.arange(0, d, 2, dtype=torch.float64)                            # (d/2,)
    if variant == "i/d":
        return base ** (-(two_i / 2) / d)
    if variant == "one":
        return torch.ones(d // 2, dtype=torch.float64)
    if variant == "inverse":
        return base ** (two_i / d)
    if variant == "float32":
        return (torch.tensor(base) ** (-torch.arange(0, d, 2) / d)).double()    # float32 ω, then float64
    return base ** (-two_i / d)


def spectrum(positions, d, base=10000.0, *, variant="", angle_dtype=torch.float64):
    """Sorted eigenvalues of the symmetric part of M_p for each p: cos(p·ω_i), each twice. (P, d)."""
    omega = frequencies(d, base, variant=variant)
    if angle_dtype == torch.float32:
        angle = (positions.float()[:, None] * omega.float()).double()
    else:
        angle = positions.double()[:, None] * omega
    return angle.cos().repeat_interleave(2, dim=-1).sort(dim=-1).values


def rotation_maps(fn, case, d, positions=None, T=None, dtype=torch.float64, **kwargs):
    """M (P, d, d) with fn(x)[token at position p] = M[p] @ x, read off `fn` with unit vectors:
    batch row j holds e_j at every position. positions=None: fn's default positions 0..T-1."""
    P = T if positions is None else positions.shape[-1]
    x = torch.eye(d, dtype=dtype)[:, None, :].expand(d, P, d).contiguous()      # (d, P, d)
    out = call_learner(case, fn, x, **kwargs) if positions is None else call_learner(case, fn, x, positions, **kwargs)
    expect_shape(case, out, (d, P, d), name="apply_rotary(x)")
    return out.detach().to(torch.float64).permute(1, 2, 0)                      # (P, d_out, d_in)


def _symmetric_spectrum(M):
    return torch.linalg.eigvalsh((M + M.transpose(-1, -2)) / 2)                  # (P, d), ascending


def _check_maps(case, M, positions, d, base=10000.0, tol=1e-6, variants=("i/d", "one", "inverse", "float32")):
    """The properties of RoPE on the maps M (P, d, d) at `positions` (P,)."""
    eye = torch.eye(d, dtype=torch.float64)
    at_zero = (positions == 0).nonzero().flatten()
    if len(at_zero):
        err = (M[at_zero[0]] - eye).abs().max().item()
        expect(err <= tol, f"[{case}] at position 0 your function changes x (max |M_0 - I| = {err:.3g}): a rotation "
                           "by angle 0 is the identity, so position 0 must leave x unchanged - sin and cos swapped, "
                           "or a sign that makes it a reflection?")
    gram = (M @ M.transpose(-1, -2) - eye).abs().amax(dim=(-1, -2))             # (P,)
    if gram.max() > tol:
        i = int(gram.argmax())
        norms = (M[i].norm(dim=0) - 1).abs().max().item()
        raise CheckFailed(f"[{case}] at position {int(positions[i])} your function is not a rotation: it changes the "
                          f"length of some vectors (max |M Mᵀ - I| = {gram.max().item():.3g}, a unit vector's norm moves "
                          f"by up to {norms:.3g}). Both features of a pair must turn by the same angle in one plane "
                          "(e.g. cos/sin indexed for one pairing while the features are paired another way)")
    got = _symmetric_spectrum(M)
    want = spectrum(positions, d, base)
    err = (got - want).abs().max().item()
    if err > tol:
        hint = ""
        for variant, says in (("i/d", "frequencies base^(-i/d): the pair index i over d, not 2i/d"),
                              ("one", "the same angle p for every pair: each pair needs its own frequency"),
                              ("inverse", "angles p·base^(+2i/d): the exponent's sign is flipped"),
                              ("float32", "frequencies computed in float32: at large positions their rounding "
                                          "(1e-7 relative) becomes an angle error of 1e-3 - compute ω and p·ω in float64")):
            if variant in variants and (got - spectrum(positions, d, base, variant=variant)).abs().max() <= tol:
                hint = f" - this matches {says}"
                break
        if not hint and (got - spectrum(positions, d, base, angle_dtype=torch.float32)).abs().max() <= tol:
            hint = (" - this matches angles p·ω computed in float32: at position 20,000 float32 keeps about 3 "
                    "decimals of the angle - compute p·ω in float64")
        if not hint and base != 10000.0 and (got - spectrum(positions, d, 10000.0)).abs().max() <= tol:
            hint = f" - this matches base 10000: the `base` argument ({base:g}) is ignored"
        if not hint and (got - spectrum(torch.arange(len(positions)), d, base)).abs().max() <= tol:
            hint = f" - these are the angles of positions 0..{len(positions) - 1}: the `positions` argument is ignored"
        i = int((got - want).abs().amax(-1).argmax())
        raise CheckFailed(f"[{case}] at position {int(positions[i])} the rotation angles are not p·ω_i with the "
                          f"lesson's ω_i = base^(-2i/d), base {base:g} (their cosines are off by up to {err:.2g}){hint}")


def _check_relative(case, M, positions, tol=1e-6):
    """Scores depend on the offset only: M_aᵀ M_b = M_{a+s}ᵀ M_{b+s} (consecutive positions)."""
    rel = M[:-1].transpose(-1, -2)[:, None] @ M[:-1][None]                         # (P-1, P-1, d, d)
    shifted = M[1:].transpose(-1, -2)[:, None] @ M[1:][None]
    err = (rel - shifted).abs().amax(dim=(-1, -2))
    if err.max() > tol:
        a, b = (int(i) for i in (err == err.max()).nonzero()[0])
        raise CheckFailed(f"[{case}] the score q·k of a query at position {int(positions[a])} and a key at "
                          f"{int(positions[b])} differs from the same pair moved one position on ({int(positions[a]) + 1}, "
                          f"{int(positions[b]) + 1}) (max difference {err.max().item():.3g} per unit q, k): RoPE's "
                          "scores must depend on the offset only")


def _check_tokens(case, fn, x, positions, M_of, atol, **kwargs):
    """fn(x, positions) applies to each token the map of its own position: M_of (a dict p -> M_p)."""
    got = call_learner(case, fn, x, **kwargs) if positions is None else call_learner(case, fn, x, positions, **kwargs)
    expect_shape(case, got, x.shape)
    pos = torch.arange(x.shape[-2]) if positions is None else positions
    pos = pos.expand(x.shape[:-1])                                                 # (..., T)
    maps = torch.stack([M_of[int(p)] for p in pos.flatten()])                      # (N, d, d)
    want = (maps @ x.double().reshape(-1, x.shape[-1], 1)).reshape(x.shape)
    err = (got.detach().double() - want).abs()
    scale = max(1.0, x.abs().max().item())
    if err.max() > atol * scale:
        where = tuple((err == err.max()).nonzero()[0].tolist())
        hint = ""
        if positions is not None and positions.dim() > 1:
            same = positions.reshape(-1, positions.shape[-1])[0]
            alt = torch.stack([M_of[int(p)] for p in same.expand(pos.shape).flatten()])
            if ((alt @ x.double().reshape(-1, x.shape[-1], 1)).reshape(x.shape) - got.detach().double()).abs().max() \
                    <= atol * scale:
                hint = " - this matches the first sequence's positions used for every sequence: each has its own"
        raise CheckFailed(f"[{case}] the token at index {where[:-1]} is not rotated as its position "
                          f"{int(pos[where[:-1]])} rotates a unit vector (max |difference| {err.max().item():.3g}): "
                          f"each token gets the rotation of its own position, the same for every token there{hint}")


def _case_maps(fn, case, d, positions, base=None, dtype=torch.float64, tol=1e-6, check_relative=True):
    kwargs = {} if base is None else {"base": base}
    M = rotation_maps(fn, case, d, positions, dtype=dtype, **kwargs)
    _check_maps(case, M, positions, d, 10000.0 if base is None else base, tol=tol)
    if check_relative:
        _check_relative(case, M, positions, tol=tol)
    return {int(p): M[i] for i, p in enumerate(positions)}


@exercise("05.rope", points=2, uses="apply_rotary")
def check_rope(fn, rng):
    """Default positions 0..T-1 on random shapes and bases: position 0 the identity, rotations (norms kept),
    scores that depend on the offset only, angles p·ω_i; each token rotated by its position's map."""
    sizes = [(8, 6)] + [(2 * randint(rng, 1, 9), randint(rng, 2, 10)) for _ in range(3)]
    for i, (d, T) in enumerate(sizes):
        case = f"case {i}: d={d}, T={T}, default positions 0..{T - 1}"
        M = rotation_maps(fn, case, d, T=T)
        positions = torch.arange(T)
        _check_maps(case, M, positions, d)
        _check_relative(case, M, positions)
        M_of = {int(p): M[j] for j, p in enumerate(positions)}
        lead = tuple(int(n) for n in torch.randint(1, 4, (randint(rng, 0, 3),), generator=rng))
        x = torch.randn(*lead, T, d, generator=rng)
        _check_tokens(f"{case}, x {tuple(x.shape)} float32", fn, x, None, M_of, atol=2e-6)
    d, T = 2 * randint(rng, 2, 7), randint(rng, 3, 8)
    base = float(randint(rng, 50, 1000))
    case = f"base={base:g}, d={d}, T={T}"
    M = rotation_maps(fn, case, d, T=T, base=base)
    _check_maps(case, M, torch.arange(T), d, base)


@exercise("05.rope-positions", points=2, uses="apply_rotary")
def check_positions(fn, rng):
    """Explicit positions: after a 10-token cache, per sequence (B, T), shared over heads (B, 1, T), and
    positions up to 20,000 (angles in float64)."""
    d = 8
    cache = torch.arange(10, 14)
    case = "x (2, 4, 8), positions 10..13 (tokens appended after a 10-token cache)"
    M_of = _case_maps(fn, case, d, cache)
    _check_tokens(case, fn, torch.randn(2, 4, d, generator=rng), cache, M_of, atol=2e-6)

    B, T, d = 3, 5, 6
    per_row = torch.randint(0, 100, (B, T), generator=rng)
    per_row[1] = per_row[0].flip(0) + 1                    # rows that differ
    case = f"x ({B}, {T}, {d}), positions {tuple(per_row.shape)}: each sequence has its own positions"
    M_of = _case_maps(fn, case, d, per_row.flatten().unique(), check_relative=False)
    _check_tokens(case, fn, torch.randn(B, T, d, generator=rng), per_row, M_of, atol=2e-6)

    B, H, T, d = 2, 3, 4, 4
    heads = torch.randint(0, 50, (B, 1, T), generator=rng)
    case = f"x ({B}, {H}, {T}, {d}) (batch, heads, tokens, features), positions {tuple(heads.shape)} shared by the heads"
    M_of = _case_maps(fn, case, d, heads.flatten().unique(), check_relative=False)
    _check_tokens(case, fn, torch.randn(B, H, T, d, generator=rng), heads, M_of, atol=2e-6)

    d = 16
    far = torch.randint(15000, 20001, (6,), generator=rng)
    case = f"float32, d={d}, positions {far.tolist()}: compute the frequencies and angles in float64"
    M = rotation_maps(fn, case, d, far, dtype=torch.float32)
    _check_maps(case, M, far, d, tol=2e-5)
    q, k = torch.randn(d, generator=rng), torch.randn(d, generator=rng)
    shift = randint(rng, 1000, 15000)
    m, n = int(far[0]), int(far[1])
    pairs = [(m, n), (m - shift, n - shift)]
    scores = []
    for a, b in pairs:
        qa = call_learner(case, fn, q[None], torch.tensor([a]))
        kb = call_learner(case, fn, k[None], torch.tensor([b]))
        scores.append((qa.double() * kb.double()).sum().item())
    err = abs(scores[0] - scores[1])
    expect(err <= 1e-4 * max(1.0, abs(scores[1])),
           f"[float32, q at {m}, k at {n} against q at {m - shift}, k at {n - shift}] the scores {scores[0]:.5f} and "
           f"{scores[1]:.5f} differ: the offset is the same, so RoPE's score must be too - angles computed in float32 "
           "lose it at large positions")


@exercise("05.rope-conformance", points=1, uses="apply_rotary")
def check_conformance(fn, rng):
    """An odd feature size raises ValueError (a feature without a partner); x's shape and dtype come back."""
    for d in (5, 1):
        x = torch.randn(2, 3, d, generator=rng)
        expect_value_error(f"x (2, 3, {d}): an odd last dimension has a feature without a partner",
                           lambda: fn(x), what=" naming the size")
    for dtype in (torch.float64, torch.float16):
        x = torch.randn(2, 3, 4, generator=rng).to(dtype)
        case = f"x (2, 3, 4) {dtype}"
        got = call_learner(case, fn, x)
        expect(isinstance(got, torch.Tensor) and got.dtype == dtype and tuple(got.shape) == (2, 3, 4),
               f"[{case}] return a tensor of x's shape and dtype ({dtype}), got "
               f"{getattr(got, 'dtype', type(got).__name__)} {tuple(getattr(got, 'shape', ()))}")


# ---------------------------------------------------------------- Task 2: predict, then measure

SCHEMES = ("none", "absolute", "rope")


def attention_layer(scheme, x, w_q, w_k, w_v, table, positions, rotary, *, variant=""):
    """Single-head self-attention with `scheme`'s positions (float64), and known wrong variants."""
    h = x + table[positions] if scheme == "absolute" and variant != "qk-only" else x
    hq = x + table[positions] if scheme == "absolute" else x
    if variant == "transposed":
        w_q, w_k, w_v = w_q.T, w_k.T, w_v.T
    q, k, v = hq @ w_q, hq @ w_k, h @ w_v                                          # (B, T, d)
    if scheme == "rope":
        q, k = rotary(q, positions), rotary(k, positions)
    scores = q @ k.transpose(-2, -1)
    if variant != "no-scale":
        scores = scores / math.sqrt(x.shape[-1])
    return torch.softmax(scores, dim=-2 if variant == "query-softmax" else -1) @ v


def gaps(scheme, x, w_q, w_k, w_v, table, perm, shift, rotary, *, variant=""):
    """(order_gap, shift_gap) as the task defines them, and the variants a learner's can match."""
    T = x.shape[1]
    pos = torch.arange(T)

    def f(inp, p):
        return attention_layer(scheme, inp, w_q, w_k, w_v, table, p, rotary, variant=variant)

    base = f(x, pos)
    if variant == "unpermuted":
        order = f(x[:, perm], pos) - base
    elif variant == "positions-moved":
        order = f(x[:, perm], pos[perm]) - base[:, perm]
    elif variant == "inverse":
        order = f(x[:, perm], pos) - base[:, torch.argsort(perm)]
    else:
        order = f(x[:, perm], pos) - base[:, perm]
    moved = f(x, pos + shift) - base
    reduce = {"mean": lambda t: t.abs().mean(), "rms": lambda t: t.pow(2).mean().sqrt()}.get(
        variant, lambda t: t.abs().max())
    return reduce(order).item(), reduce(moved).item()


WRONG = (("unpermuted", "compared the output for the permuted tokens with the unpermuted output: an "
                        "equivariant layer then looks order-aware - compare with layer(x)[:, perm]"),
         ("positions-moved", "moved the positions together with the tokens: the positions belong to the slots "
                             "0..T-1, only the tokens are permuted"),
         ("inverse", "undid the permutation with the wrong index: compare layer(x[:, perm]) with layer(x)[:, perm]"),
         ("mean", "took the mean |difference|: the task asks for the largest"),
         ("rms", "took the RMS difference: the task asks for the largest |difference|"),
         ("qk-only", "added the position vectors to the queries' and keys' input only: the table is added to x, "
                     "so the values carry it too"),
         ("transposed", "used q = x @ w_q.T: the weights are (d_in, d_out), q = x @ w_q"),
         ("no-scale", "did not divide the scores by √d"),
         ("query-softmax", "took the softmax over the queries: each query's weights over the keys sum to 1"))


def _probe_case(rng, i, scheme, kind):
    B, T, d = randint(rng, 1, 4), randint(rng, 3, 9), 2 * randint(rng, 1, 7)
    if B == T:
        B += 1
    shift = randint(rng, 1, 3000)
    max_len = shift + T + randint(rng, 0, 5)
    if kind == "sinusoidal":
        pos = torch.arange(max_len, dtype=torch.float64)[:, None]
        angle = pos / 10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
        table = torch.stack((angle.sin(), angle.cos()), dim=-1).flatten(-2)          # (max_len, d)
    else:
        table = torch.randn(max_len, d, generator=rng, dtype=torch.float64) * 0.7
    x = torch.randn(B, T, d, generator=rng, dtype=torch.float64)
    w = [torch.randn(d, d, generator=rng, dtype=torch.float64) * d ** -0.5 * 1.5 for _ in range(3)]
    perm = torch.randperm(T, generator=rng)
    while bool((perm == torch.arange(T)).all()):
        perm = torch.randperm(T, generator=rng)
    table_name = f"{kind} table ({max_len}, {d})" if scheme == "absolute" else f"table ({max_len}, {d}) unused"
    case = f"case {i}: {scheme!r}, x ({B}, {T}, {d}), {table_name}, perm {perm.tolist()}, shift {shift}"
    return case, (x, *w, table, perm, shift)


def _numbers(case, got):
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        raise CheckFailed(f"[{case}] position_probe should return two numbers (order_gap, shift_gap), got "
                          f"{type(got).__name__}{f' of {len(got)} values' if isinstance(got, (tuple, list)) else ''}")
    out = []
    for name, value in zip(("order_gap", "shift_gap"), got):
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise CheckFailed(f"[{case}] {name} should be a finite number, got {value!r}")
        out.append(float(value))
    return tuple(out)


def _close(got, want):
    return all(abs(g - w) <= 1e-7 + 1e-5 * abs(w) for g, w in zip(got, want))



def _prediction_note(predicted, measured):
    """What was measured, and the learner's prediction beside it (shown after the check passes)."""
    def word(changes):
        return "changes" if changes else "same"

    parts, marks = [], []
    for scheme in SCHEMES:
        order, shift = measured[scheme]
        parts.append(f"{scheme}: order {order:.1g}, shift {shift:.1g}")
        guess = predicted.get(scheme) if isinstance(predicted, dict) else None
        if isinstance(guess, dict) and all(isinstance(guess.get(k), bool) for k in ("order", "shift")):
            right = guess["order"] == (order > 1e-6) and guess["shift"] == (shift > 1e-6)
            marks.append(f"{scheme} {word(guess['order'])}/{word(guess['shift'])}{'' if right else ' (wrong)'}")
    said = ("you predicted " + ", ".join(marks)) if len(marks) == len(SCHEMES) else \
        "no prediction recorded in predicted_changes"
    return f"{said}; measured gaps: " + "; ".join(parts) + " (the lesson: about 1e-7 without positions, in float32)"


@exercise("05.position-probe", points=3, uses=("predicted_changes", "position_probe", "apply_rotary"))
def check_probe(predicted, fn, rotary, rng):
    """order_gap and shift_gap of single-head attention with no positions, an absolute table (sinusoidal or
    learned) and RoPE, against a float64 reference on hidden shapes, weights, permutations and shifts."""
    measured = {}
    plan = [("none", "sinusoidal"), ("absolute", "sinusoidal"), ("rope", "sinusoidal"), ("absolute", "learned"),
            ("none", "learned"), ("rope", "learned"), ("absolute", "sinusoidal")]
    for i, (scheme, kind) in enumerate(plan):
        case, (x, w_q, w_k, w_v, table, perm, shift) = _probe_case(rng, i, scheme, kind)
        got = _numbers(case, call_learner(case, fn, scheme, x.clone(), w_q.clone(), w_k.clone(), w_v.clone(),
                                          table.clone(), perm.clone(), shift))
        want = gaps(scheme, x, w_q, w_k, w_v, table, perm, shift, rotary)
        if not _close(got, want):
            hint = next((f" - this matches a probe that {says}" for variant, says in WRONG
                         if _close(got, gaps(scheme, x, w_q, w_k, w_v, table, perm, shift, rotary, variant=variant))),
                        "")
            raise CheckFailed(f"[{case}] (order_gap, shift_gap) = ({got[0]:.4g}, {got[1]:.4g}), expected "
                              f"({want[0]:.4g}, {want[1]:.4g}){hint}")
        measured.setdefault(scheme, want)
    return _prediction_note(predicted, measured)


written("05.written", points=2, rubric=(
    "Self-attention without positions is permutation-equivariant: permuting the tokens only permutes the "
    "output, so order must be added (a vector added to the input, or a rotation of q and k)",
    "BERT's positions are a learned table with max_position_embeddings = 512 rows ([CLS] and [SEP] count): "
    "there is no vector for a 513th position - the limit is the table's size, a pre-training choice, not "
    "something attention itself imposes",
    "Rows past the trained length get no gradient and stay random, so a longer table needs further "
    "pre-training; the sinusoidal formula exists at every position, but in the lesson's balanced test the "
    "sinusoidal model also lost most of its accuracy 8 positions past the trained length (neither extrapolated there)",
    "Relative schemes (RoPE, ALiBi, T5's bias) make the score depend on the offset only, so shifting a whole "
    "sequence changes nothing - the usual fix for length, though offsets never seen in training stay untrained",
))
