"""Graded checks for lesson 12: a factorised (ALBERT-style) vocabulary matrix tied between the input
embedding and the output layer, and the parameters that tying and factorising save (derived, on hidden
sizes). The references are written here from the definition."""
import numbers

import torch
from torch import nn

from ..grader.authoring import CheckFailed, exercise, expect, expect_close, expect_shape, randint, written

_SHORTCUTS = ("course_lib.weight_tying:tie_weights",)
_MEMBERS = {"word.weight": lambda V, E, H: (V, E), "project_in.weight": lambda V, E, H: (H, E),
            "project_in.bias": lambda V, E, H: (H,), "project_out.weight": lambda V, E, H: (E, H),
            "project_out.bias": lambda V, E, H: (E,), "output_bias": lambda V, E, H: (V,)}


def _tol(expected):
    """float32 rounding, relative to the values' scale."""
    return 1e-4 * max(1.0, float(expected.abs().max()))


def _sizes(rng):
    """V > H > E, all different, so a missing projection or a transpose shows as a shape error."""
    E = randint(rng, 2, 7)
    H = E + randint(rng, 1, 9)
    V = H + randint(rng, 3, 31)
    return V, E, H


def _weights(rng, V, E, H):
    return {name: torch.randn(shape(V, E, H), generator=rng, dtype=torch.float64) for name, shape in _MEMBERS.items()}


def ref_forward(w, ids):
    return w["word.weight"][ids] @ w["project_in.weight"].T + w["project_in.bias"]


def ref_logits(w, h):
    z = h @ w["project_out.weight"].T + w["project_out.bias"]
    return z @ w["word.weight"].T + w["output_bias"]


def _structure(module, V, E, H, case):
    """The members, their shapes and the parameter count; returns the named parameters."""
    expect(isinstance(module, nn.Module), f"[{case}] FactorizedTiedVocab should subclass nn.Module")
    params = dict(module.named_parameters())
    expected_names = sorted(_MEMBERS)
    if sorted(params) != expected_names:
        extra = sorted(set(params) - set(expected_names))
        hint = ""
        if any(params[n].shape in ((V, H), (H, V), (V, E), (E, V)) for n in extra):
            hint = (" - a separate vocabulary-sized output matrix: the output layer must score against "
                    "word.weight itself (tied), not a matrix of its own")
        raise CheckFailed(f"[{case}] parameters {sorted(params)}, expected exactly {expected_names}{hint}")
    for name, shape in _MEMBERS.items():
        want = shape(V, E, H)
        expect(tuple(params[name].shape) == want,
               f"[{case}] {name} has shape {tuple(params[name].shape)}, expected {want} "
               "(nn.Linear(in, out) stores weight as (out, in))")
    return params


def _build(cls, V, E, H, rng, case):
    """The learner's module with random reference weights copied in, and those weights."""
    module = cls(V, E, H)
    params = _structure(module, V, E, H, case)
    weights = _weights(rng, V, E, H)
    with torch.no_grad():
        for name, value in weights.items():
            params[name].copy_(value.float())
    return module.eval(), {k: v.float().double() for k, v in weights.items()}


@exercise("12.factorized-embed", points=1, uses="FactorizedTiedVocab", forbids=_SHORTCUTS)
def check_embed(cls, rng):
    """Members and shapes; forward(ids) = project_in(word(ids)) on ids of any shape."""
    V, E, H = 300, 8, 24
    _structure(cls(V, E, H), V, E, H, "members of FactorizedTiedVocab(300, 8, 24)")
    for n, id_shape in enumerate([(5,), (2, 7), (3, 2, 4), (1,), ()]):
        V, E, H = _sizes(rng)
        case = f"case {n}: FactorizedTiedVocab({V}, {E}, {H}), ids of shape {id_shape}"
        module, w = _build(cls, V, E, H, rng, case)
        ids = torch.randint(0, V, id_shape, generator=rng)
        ids.view(-1)[:1] = V - 1                                    # the last token id is used too
        with torch.no_grad():
            got = module(ids)
        expect_shape(case, got, id_shape + (H,), "forward(ids)")
        want = ref_forward(w, ids).float()
        expect_close(case, got, want, atol=_tol(want), rtol=1e-4, name="forward(ids)")


@exercise("12.factorized-logits", points=2, uses="FactorizedTiedVocab", forbids=_SHORTCUTS)
def check_logits(cls, rng):
    """logits(h) = project_out(h) @ word.weight.T + output_bias; the matrix's gradient sums both uses."""
    case = "worked example V=3, E=1, H=2"
    module, _ = _build(cls, 3, 1, 2, rng, case)
    w = {"word.weight": torch.tensor([[1.0], [2.0], [-1.0]]), "project_in.weight": torch.zeros(2, 1),
         "project_in.bias": torch.zeros(2), "project_out.weight": torch.tensor([[1.0, 1.0]]),
         "project_out.bias": torch.zeros(1), "output_bias": torch.tensor([0.0, 0.0, 0.5])}
    params = dict(module.named_parameters())
    with torch.no_grad():
        for name, value in w.items():
            params[name].copy_(value)
        expect_close(case, module.logits(torch.tensor([[0.5, 0.25]])), torch.tensor([[0.75, 1.5, -0.25]]),
                     atol=1e-6, name="logits(h)")
    for n, lead in enumerate([(4,), (2, 3), (2, 1, 3), (1,)]):
        V, E, H = _sizes(rng)
        case = f"case {n}: FactorizedTiedVocab({V}, {E}, {H}), h of shape {lead + (H,)}"
        module, w = _build(cls, V, E, H, rng, case)
        h = torch.randn(*lead, H, generator=rng)
        with torch.no_grad():
            got = module.logits(h)
        expect_shape(case, got, lead + (V,), "logits(h)")
        want = ref_logits(w, h.double()).float()
        expect_close(case, got, want, atol=_tol(want), rtol=1e-4, name="logits(h)")
    for n in range(2):
        V, E, H = _sizes(rng)
        case = (f"gradient {n}: FactorizedTiedVocab({V}, {E}, {H}), loss = cross-entropy of logits(tanh(forward(ids))) "
                "- word.weight's gradient must be the lookup's plus the output layer's")
        module, w = _build(cls, V, E, H, rng, case)
        module.train()
        ids = torch.randint(0, V, (2, 5), generator=rng)
        targets = torch.randint(0, V, (2, 5), generator=rng)
        # the reference gradient: two copies of the matrix, one per use, then summed
        e_in = w["word.weight"].clone().requires_grad_(True)
        e_out = w["word.weight"].clone().requires_grad_(True)
        ref = {**w, "word.weight": e_in}
        h = torch.tanh(ref_forward(ref, ids))
        logits = ref_logits({**w, "word.weight": e_out}, h)
        torch.nn.functional.cross_entropy(logits.reshape(-1, V), targets.reshape(-1)).backward()
        expected = (e_in.grad + e_out.grad).float()
        module.zero_grad()
        out = module.logits(torch.tanh(module(ids)))
        expect_shape(case, out, (2, 5, V), "logits(tanh(forward(ids)))")
        torch.nn.functional.cross_entropy(out.reshape(-1, V), targets.reshape(-1)).backward()
        grad = module.word.weight.grad
        expect(grad is not None, f"[{case}] word.weight got no gradient")
        if torch.allclose(grad, e_in.grad.float(), atol=_tol(expected), rtol=1e-4):
            raise CheckFailed(f"[{case}] word.weight's gradient is the lookup's only: the output layer's use sends "
                              "none (a .detach(), or a copy of the matrix?)")
        expect_close(case, grad, expected, atol=_tol(expected), rtol=1e-4, name="word.weight.grad")


# ---------------------------------------------------------------- 12.parameters-saved: a derivation

def saved_reference(V, E, H):
    untied = V * H + (H * V + V)                          # nn.Embedding(V, H) + nn.Linear(H, V)
    factorised_tied = V * E + (E * H + H) + (H * E + E) + V
    return untied - factorised_tied


_SAVED_VARIANTS = {   # what a learner's count looks like when one piece is missed: the feedback names it
    "no-baseline-bias": (lambda V, E, H: saved_reference(V, E, H) - V,
                         "the untied output layer nn.Linear(H, V) has a bias: V more parameters in the baseline"),
    "no-projection-biases": (lambda V, E, H: saved_reference(V, E, H) + H + E,
                             "project_in and project_out have biases (H and E parameters) that the factorised "
                             "module keeps"),
    "matrix-counted-twice": (lambda V, E, H: saved_reference(V, E, H) - V * E,
                             "the factorised module holds its V x E matrix once: it is tied, both ends use it"),
    "tying-only": (lambda V, E, H: V * H,
                   "V*H is what tying alone saves at width H; the factorised module also replaces the V x H "
                   "matrix by V x E plus two projections"),
    "sign": (lambda V, E, H: -saved_reference(V, E, H),
             "the sign is reversed: saved = untied pair - factorised tied module"),
}


def _integer(case, got):
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, numbers.Real) or got != got or got != int(got):
        raise CheckFailed(f"[{case}] return a whole number of parameters, got {got!r}")
    return int(got)


@exercise("12.parameters-saved", points=2, uses="parameters_saved", forbids=_SHORTCUTS)
def check_saved(fn, rng):
    """The parameters a factorised tied vocabulary saves over an untied V x H embedding and output layer."""
    cases = [(3, 1, 2, "worked example"), (1000, 64, 64, "E = H: tying alone, plus two projections"),
             (500, 96, 32, "E > H: the factorisation costs parameters")]
    for n in range(6):
        E = randint(rng, 4, 129)
        H = randint(rng, 16, 513)
        cases.append((randint(rng, 100, 5001), E, H, f"random sizes {n}"))
    got = {}
    for V, E, H, label in cases:
        got[V, E, H] = _integer(f"{label}: parameters_saved({V}, {E}, {H})", fn(V, E, H))
    for V, E, H, label in cases:
        expected = saved_reference(V, E, H)
        if got[V, E, H] != expected:
            # the mistake that explains every case (one case alone can be ambiguous: V*E = V when E = 1)
            hint = next((why for f, why in _SAVED_VARIANTS.values()
                         if all(f(*sizes) == value for sizes, value in got.items())), "")
            raise CheckFailed(f"[{label}: parameters_saved({V}, {E}, {H})] got {got[V, E, H]:,}, expected "
                              f"{expected:,}" + (f" - {hint}" if hint else ""))
    V, E, H = 30000, 128, 768
    saved = _integer("ALBERT-base", fn(V, E, H))
    untied = V * H + H * V + V
    return (f"ALBERT-base sizes (V={V:,}, E={E}, H={H}): your count saves {saved:,} of the untied pair's "
            f"{untied:,} parameters ({saved / untied:.0%})")


written("12.written", points=2, rubric=(
    "nn.Embedding(V, d).weight and nn.Linear(d, V).weight have the same shape (V, d): PyTorch stores a linear "
    "layer as (out, in) and computes h W^T, so logit v is h . (row v); the embedding table can serve as that "
    "matrix with no transpose",
    "tying makes both layers hold one Parameter: it saves exactly V*d numbers, and autograd adds the gradients "
    "of both uses into its one .grad (a copy, or shared .data, is not tying)",
    "Vaswani et al. share one matrix three ways - encoder embedding, decoder embedding and the pre-softmax "
    "layer - which needs one vocabulary shared by source and target (base size: about 101 M -> 63 M parameters)",
    "what it buys: the output layer gives every row a gradient at every step while an input row moves only when "
    "its token occurs, so rare words' rows learn (measured: held-out loss lower on a small Zipfian language, "
    "tied rows of rare words know their topic, untied input rows near chance)",
    "not a free win: the tied model starts with a copy-the-input bias and a higher training loss, and at large "
    "scale V*d is a small share (several large models untie)",
))
