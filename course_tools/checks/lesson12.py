"""Graded checks for lesson 12: a factorised (ALBERT-style) vocabulary matrix tied between the input
embedding and the output layer. The reference is written here from the definition."""
import torch
from torch import nn

from ..grading import CheckFailed, exercise, expect, expect_close, expect_shape, randint

_SHORTCUTS = ("course_lib.weight_tying:tie_weights",)
_MEMBERS = {"word.weight": lambda V, E, H: (V, E), "project_in.weight": lambda V, E, H: (H, E),
            "project_in.bias": lambda V, E, H: (H,), "project_out.weight": lambda V, E, H: (E, H),
            "project_out.bias": lambda V, E, H: (E,), "output_bias": lambda V, E, H: (V,)}


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
    count = sum(p.numel() for p in module.parameters())
    want = V * E + E * H + H + H * E + E + V
    expect(count == want, f"[{case}] {count} parameters, expected V*E + (E*H + H) + (H*E + E) + V = {want}")
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
    """Members, shapes and parameter count; forward(ids) = project_in(word(ids)) on ids of any shape."""
    V, E, H = 30000, 128, 768
    module = cls(V, E, H)
    _structure(module, V, E, H, "worked example V=30000, E=128, H=768")
    count = sum(p.numel() for p in module.parameters())
    expect(count == 4_067_504, f"[worked example V=30000, E=128, H=768] {count} parameters, expected 4,067,504 "
                               "= V*E + (E*H + H) + (H*E + E) + V (one vocabulary matrix, two projections, an output bias)")
    del module
    for n, id_shape in enumerate([(5,), (2, 7), (3, 2, 4), (1,), ()]):
        V, E, H = _sizes(rng)
        case = f"case {n}: FactorizedTiedVocab({V}, {E}, {H}), ids of shape {id_shape}"
        module, w = _build(cls, V, E, H, rng, case)
        ids = torch.randint(0, V, id_shape, generator=rng)
        ids.view(-1)[:1] = V - 1                                    # the last token id is used too
        with torch.no_grad():
            got = module(ids)
        expect_shape(case, got, id_shape + (H,), "forward(ids)")
        expect_close(case, got, ref_forward(w, ids).float(), atol=1e-4, rtol=1e-4, name="forward(ids)")


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
        expect_close(case, got, ref_logits(w, h.double()).float(), atol=1e-4, rtol=1e-4, name="logits(h)")
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
        if torch.allclose(grad, e_in.grad.float(), atol=1e-4, rtol=1e-4):
            raise CheckFailed(f"[{case}] word.weight's gradient is the lookup's only: the output layer's use sends "
                              "none (a .detach(), or a copy of the matrix?)")
        expect_close(case, grad, expected, atol=1e-4, rtol=1e-4, name="word.weight.grad")
