"""Graded checks for lesson 03 (why multi-head attention?).

- `03.repeat-kv`, `03.gqa-forward` (build): grouped-query attention, several query heads sharing one
  key/value head (LLaMA 2/3, Mistral), against a float64 reference; `03.gqa-conformance`: impossible
  head counts raise ValueError (its own point).
- `03.two-lookups` (apply): the lesson's answer taken where it did not go. A query that needs two
  positions at once, wired by hand into *multi-query* attention: two query heads that share one key
  and one value head. The check is a property (both answers read back from their halves of the output
  on random sequences), so any valid construction passes; feedback names what the output carries instead."""
import math

import torch
from torch import nn

from ..grader.authoring import CheckFailed, call_learner, exercise, expect, expect_close, expect_shape, expect_tuple, expect_value_error, randint, written
from ..shortcuts import ATTENTION

FORBIDS = ATTENTION + ("course_lib.attention:MultiHeadAttention",)


def _repeat_kv(x, n_rep):
    return x[:, :, None].expand(-1, -1, n_rep, -1, -1).flatten(1, 2)


@exercise("03.repeat-kv", points=1, uses="repeat_kv", forbids=FORBIDS)
def check_repeat_kv(fn, rng):
    """(B, n_kv, T, hd) -> (B, n_kv * n_rep, T, hd), query head j reading key/value head j // n_rep."""
    plans = [(1, 2, 3, 4, 3)] + [tuple(int(n) for n in torch.randint(1, 5, (5,), generator=rng)) for _ in range(5)]
    for B, n_kv, T, hd, n_rep in plans:
        x = torch.randn(B, n_kv, T, hd, generator=rng)
        case = f"x {tuple(x.shape)}, n_rep={n_rep}"
        got = call_learner(case, fn, x, n_rep)
        want = _repeat_kv(x, n_rep)
        if isinstance(got, torch.Tensor) and got.shape == want.shape and not torch.equal(got, want) \
                and torch.equal(got, x.repeat(1, n_rep, 1, 1)):
            raise CheckFailed(f"[{case}] your heads read kv heads 0, 1, 0, 1, ... (tiled): query head j should "
                              "read kv head j // n_rep, so that each group of consecutive query heads shares one")
        expect_close(case, got, want, atol=0)


def _reference(x, weights, n_heads, n_kv, *, tiled=False, swap_kv=False, scale_d_model=False, no_out=False):
    """The reference (keyword defaults) and its known wrong variants, float64."""
    (wq, bq), (wkv, bkv), (wo, bo) = [(w.double(), b.double()) for w, b in weights]
    (wk, wv), (bk, bv) = wkv.chunk(2), bkv.chunk(2)
    if swap_kv:
        (wk, bk), (wv, bv) = (wv, bv), (wk, bk)
    B, T, d = x.shape
    hd = d // n_heads
    x = x.double()

    def share(t):   # (B, n_kv, T, hd) -> (B, n_heads, T, hd)
        return t.repeat(1, n_heads // n_kv, 1, 1) if tiled else _repeat_kv(t, n_heads // n_kv)

    q = (x @ wq.T + bq).view(B, T, n_heads, hd).transpose(1, 2)
    k = share((x @ wk.T + bk).view(B, T, n_kv, hd).transpose(1, 2))
    v = share((x @ wv.T + bv).view(B, T, n_kv, hd).transpose(1, 2))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d if scale_d_model else hd)
    w = scores.softmax(-1)
    out = (w @ v).transpose(1, 2).reshape(B, T, d)
    if not no_out:
        out = out @ wo.T + bo
    return out.float(), w.float()


FORWARD_SLIPS = (({"tiled": True}, "the groups tiled (kv heads 0, 1, 0, 1, ...): query head j shares kv head j // n_rep"),
                 ({"swap_kv": True}, "keys and values swapped: the first half of kv_proj's output are the keys"),
                 ({"scale_d_model": True}, "scores scaled by 1/√d_model: each head's scores are scaled by 1/√head_dim"),
                 ({"no_out": True}, "the heads merged without out_proj"))


def _build(cls, rng, d_model, n_heads, n_kv, case):
    layer = call_learner(case, cls, d_model, n_heads, n_kv)
    expect(isinstance(layer, nn.Module), f"[{case}] GroupedQueryAttention(...) should be an nn.Module")
    kv_width = n_kv * (d_model // n_heads)
    weights = []
    for name, d_out in (("q_proj", d_model), ("kv_proj", 2 * kv_width), ("out_proj", d_model)):
        proj = getattr(layer, name, None)
        expect(isinstance(proj, nn.Linear) and proj.bias is not None,
               f"[{case}] `{name}` should be an nn.Linear with a bias, got {type(proj).__name__}")
        expect(proj.in_features == d_model and proj.out_features == d_out,
               f"[{case}] `{name}` should map {d_model} -> {d_out} features"
               + (" (keys then values, 2 * n_kv_heads * head_dim: they have fewer heads than the queries)" if name == "kv_proj" else "")
               + f", got {proj.in_features} -> {proj.out_features}")
        with torch.no_grad():
            proj.weight.copy_(torch.randn(d_out, d_model, generator=rng) / math.sqrt(d_model))
            proj.bias.copy_(torch.randn(d_out, generator=rng) * 0.2)
        weights.append((proj.weight.detach().clone(), proj.bias.detach().clone()))
    return layer, weights


def _compare(cls, rng, B, T, d_model, n_heads, n_kv, case):
    layer, weights = _build(cls, rng, d_model, n_heads, n_kv, case)
    x = torch.randn(B, T, d_model, generator=rng)
    got = call_learner(case, layer, x)
    expect_tuple(case, got, ("output", "weights"), by="forward")
    out, w = _reference(x, weights, n_heads, n_kv)
    expect_shape(case, got[1], w.shape, name="weights (one map per *query* head)")
    expect_shape(case, got[0], out.shape, name="output")
    got_out, got_w = got[0].detach().float(), got[1].detach().float()
    atol = 1e-5 * max(1.0, out.abs().max().item())
    if torch.allclose(got_w, w, atol=1e-5, rtol=0) and torch.allclose(got_out, out, atol=atol, rtol=0):
        return
    for flags, why in FORWARD_SLIPS:
        slip_out, slip_w = _reference(x, weights, n_heads, n_kv, **flags)
        if torch.allclose(got_w, slip_w, atol=1e-5, rtol=0) and torch.allclose(got_out, slip_out, atol=atol, rtol=0):
            raise CheckFailed(f"[{case}] your output and weights match {why}")
    expect_close(case, got_w, w, atol=1e-5, name="weights")
    expect_close(case, got_out, out, atol=atol, name="output")


@exercise("03.gqa-forward", points=3, uses="GroupedQueryAttention", forbids=FORBIDS)
def check_forward(cls, rng):
    """Grouped-query self-attention on random sizes, from multi-query (1 kv head) to multi-head."""
    _compare(cls, rng, 2, 5, 12, 6, 2, "x (2, 5, 12), n_heads=6, n_kv_heads=2")
    for i in range(5):
        n_kv = randint(rng, 1, 4)
        n_heads = n_kv * randint(rng, 1, 4)
        if i == 0:
            n_kv = 1                                  # multi-query attention
        if i == 1:
            n_kv = n_heads                            # plain multi-head attention
        hd = randint(rng, 1, 5)
        B, T = (int(n) for n in torch.randint(1, 6, (2,), generator=rng))
        _compare(cls, rng, B, T, n_heads * hd, n_heads, n_kv,
                 f"case {i}: x ({B}, {T}, {n_heads * hd}), n_heads={n_heads}, n_kv_heads={n_kv}")


@exercise("03.gqa-conformance", points=1, uses="GroupedQueryAttention", forbids=FORBIDS)
def check_conformance(cls, rng):
    """Impossible head counts raise ValueError; possible ones build."""
    for d_model, n_heads, n_kv, why in ((12, 6, 4, "4 kv heads cannot be shared evenly by 6 query heads"),
                                        (10, 4, 2, "4 heads do not divide d_model = 10"),
                                        (12, 6, 12, "12 kv heads for 6 query heads")):
        expect_value_error(f"GroupedQueryAttention({d_model}, {n_heads}, {n_kv}): {why}",
                           lambda: cls(d_model, n_heads, n_kv), returned="the constructor returned")
    for args in ((12, 6, 3), (8, 8, 1), (6, 2, 2)):
        call_learner(f"GroupedQueryAttention{args}: a valid configuration", cls, *args)


# ---------------------------------------------------------------- Task 3: two lookups, one shared K/V head

STATE_SHAPES = lambda n: {"q_proj.weight": (2 * n, 2 * n), "q_proj.bias": (2 * n,),            # noqa: E731
                          "kv_proj.weight": (2 * n, 2 * n), "kv_proj.bias": (2 * n,),
                          "out_proj.weight": (2 * n, 2 * n), "out_proj.bias": (2 * n,)}


def lookup_inputs(tokens):
    """x_t = [one-hot(token_t) | one-hot(t)]: (B, n, 2n) for tokens (B, n) with values < n."""
    B, n = tokens.shape
    position = torch.eye(n).expand(B, n, n)
    return torch.cat([torch.nn.functional.one_hot(tokens, n).float(), position], dim=-1)


def mqa_forward(state, x):
    """GroupedQueryAttention(2n, n_heads=2, n_kv_heads=1) in float64: (output (B, T, 2n), weights (B, 2, T, T))."""
    n = x.shape[-1] // 2
    p = {name: t.double() for name, t in state.items()}
    x = x.double()
    B, T, _ = x.shape
    q = (x @ p["q_proj.weight"].T + p["q_proj.bias"]).view(B, T, 2, n).transpose(1, 2)   # (B, 2, T, n)
    k, v = (x @ p["kv_proj.weight"].T + p["kv_proj.bias"]).split(n, dim=-1)              # (B, T, n) each
    w = (q @ k[:, None].transpose(-2, -1) / math.sqrt(n)).softmax(-1)                   # (B, 2, T, T)
    heads = (w @ v[:, None]).transpose(1, 2).reshape(B, T, 2 * n)                        # concat heads
    return heads @ p["out_proj.weight"].T + p["out_proj.bias"], w


def _state(case, got, n):
    if isinstance(got, torch.nn.Module):
        got = got.state_dict()
    expect(isinstance(got, dict), f"[{case}] return a dict of tensors (a state dict), got {type(got).__name__}")
    state = {}
    for name, shape in STATE_SHAPES(n).items():
        t = got.get(name)
        expect(isinstance(t, torch.Tensor), f"[{case}] the state dict has no tensor `{name}`")
        expect(tuple(t.shape) == shape, f"[{case}] `{name}` has shape {tuple(t.shape)}, expected {shape} "
                                        f"(nn.Linear's layout: (out_features, in_features))")
        expect(bool(torch.isfinite(t).all()), f"[{case}] `{name}` contains NaN or inf")
        state[name] = t.detach()
    return state


def _read(out, n):
    """The token each half of the output carries: (B, T) for the first n and the last n features."""
    return out[..., :n].argmax(-1), out[..., n:].argmax(-1)


def _diagnose_lookups(case, tokens, first_half, second_half, weights, n):
    B, T = tokens.shape
    prev = torch.cat([tokens[:, :1], tokens[:, :-1]], dim=1)       # token at t-1 (t = 0 is not checked)
    first = tokens[:, :1].expand(B, T)
    nxt = torch.cat([tokens[:, 1:], tokens[:, -1:]], dim=1)
    t = slice(1, None)
    bad = torch.nonzero(first_half[:, t] != prev[:, t])
    if len(bad):
        b, pos = int(bad[0, 0]), int(bad[0, 1]) + 1
        said = (f"[{case}] sequence {tokens[b].tolist()}, position {pos}: features 0..{n - 1} read token "
                f"{int(first_half[b, pos])}, the previous token is {int(prev[b, pos])}")
        if bool((first_half[:, t] == first[:, t]).all()):
            raise CheckFailed(f"{said} - they carry the *first* token: the two answers are in each other's halves")
        if bool((first_half[:, t] == tokens[:, t]).all()):
            raise CheckFailed(f"{said} - they carry the token at the position itself, not one step back")
        if bool((first_half[:, 1:-1] == nxt[:, 1:-1]).all()):
            raise CheckFailed(f"{said} - they carry the *next* token: one step forward instead of back")
        raise CheckFailed(f"{said}; the two heads put {weights[b, 0, pos, pos - 1]:.2f} and "
                          f"{weights[b, 1, pos, pos - 1]:.2f} of their weight on position {pos - 1}, the most "
                          f"on positions {int(weights[b, 0, pos].argmax())} and {int(weights[b, 1, pos].argmax())}")
    bad = torch.nonzero(second_half[:, t] != first[:, t])
    if len(bad):
        b, pos = int(bad[0, 0]), int(bad[0, 1]) + 1
    else:
        bad = torch.nonzero(second_half != first)
        b, pos = int(bad[0, 0]), int(bad[0, 1])
    said = (f"[{case}] sequence {tokens[b].tolist()}, position {pos}: features {n}..{2 * n - 1} read token "
            f"{int(second_half[b, pos])}, the first token is {int(first[b, pos])}")
    if bool((second_half[:, t] == prev[:, t]).all()):
        raise CheckFailed(f"{said} - they carry the previous token, like the first half: the two query heads "
                          "look at the same place, so the second answer is lost (each head needs its own query)")
    if bool((second_half == tokens).all()):
        raise CheckFailed(f"{said} - they carry the token at the position itself")
    raise CheckFailed(f"{said}; the heads put {weights[b, 0, pos, 0]:.2f} and {weights[b, 1, pos, 0]:.2f} of "
                      "their weight on position 0")


@exercise("03.two-lookups", points=3, uses="two_lookups_state", forbids=FORBIDS)
def check_two_lookups(fn, rng):
    """Multi-query attention wired by hand: each position reads the previous token and the first token."""
    sizes = [4, 7] + [randint(rng, 3, 10) for _ in range(3)]
    for n in sizes:
        case = f"n={n}: GroupedQueryAttention({2 * n}, n_heads=2, n_kv_heads=1), sequences of {n} tokens"
        state = _state(case, call_learner(case, fn, n), n)
        tokens = torch.randint(0, n, (32, n), generator=rng)
        tokens[0] = torch.arange(n).flip(0)                       # every token different
        out, weights = mqa_forward(state, lookup_inputs(tokens))
        first_half, second_half = _read(out, n)
        prev_ok = bool((first_half[:, 1:] == tokens[:, :-1]).all())
        first_ok = bool((second_half == tokens[:, :1]).all())
        if not (prev_ok and first_ok):
            _diagnose_lookups(case, tokens, first_half, second_half, weights, n)
    return ("both answers read back at every position: two query heads over one shared key and value head "
            "keep two attention patterns, and each writes its own half of the output")


written("03.written", points=2, rubric=(
    "splitting d_model into h heads costs nothing: the projections stay d×d and the matrix-multiply FLOPs "
    "are identical (the split is a reshape)",
    "what it buys is h independent softmax distributions per query, each writing into its own slice of "
    "the output that W_O keeps apart",
    "one head can spread its weight over two positions, but then it adds their values in one space and "
    "cannot tell which came from where; on previous-token + keyed-token the 1-head model stayed at chance "
    "(pair accuracy about 1/16) while 2, 4 and 8 heads solved it",
    "heads specialise (a previous-token head and a keyed-token head), and removing all heads of one role "
    "removes exactly that answer; many single heads are redundant",
    "not folklore: heads add no capacity (the concatenation is as wide as one head), and more heads shrink "
    "d_h, which limits each head's score rank",
))
