"""Graded checks for lesson 10: GELU (exact and tanh forms) and the position-wise feed-forward block."""
from contextlib import contextmanager
from unittest import mock

import torch
import torch.nn.functional as F
from torch import nn

from course_lib.activations import gelu as reference_gelu
from course_lib.feedforward import FeedForward as Reference
from ..grading import CheckFailed, expect, expect_close, expect_tensor, exercise


def _draw(rng, low, high):
    return int(torch.randint(low, high, (1,), generator=rng))


@contextmanager
def _no_library_gelu():
    """The exercise is to write the formula: calling F.gelu / nn.GELU fails with a clear message."""
    def refuse(*args, **kwargs):
        raise CheckFailed("write the formula yourself: do not call torch.nn.functional.gelu or nn.GELU")
    with mock.patch.object(F, "gelu", refuse):
        yield


def _inputs(rng):
    """Random shapes (including a scalar) and a grid that covers the tails and the bend near 0."""
    cases = [(f"x of shape {shape}", torch.randn(shape, generator=rng) * 3)
             for shape in [(), (7,), (2, 5), (3, 4, _draw(rng, 1, 9))]]
    cases.append(("x = linspace(-10, 10, 401)", torch.linspace(-10, 10, 401)))
    cases.append(("float64 x = linspace(-6, 6, 241)", torch.linspace(-6, 6, 241, dtype=torch.float64)))
    return cases


def _check_form(fn, rng, approximate):
    with _no_library_gelu():
        for case, x in _inputs(rng):
            expected = reference_gelu(x, approximate)
            got = expect_tensor(case, fn(x.clone()))
            expect(got.dtype == x.dtype, f"[{case}] returned dtype {got.dtype}, expected {x.dtype} "
                                         "(keep the input's dtype)")
            atol = 1e-12 if x.dtype == torch.float64 else 1e-6
            expect_close(case, got, expected, atol=atol, rtol=1e-6)


@exercise("10.gelu-exact", points=1, uses="gelu")
def check_gelu_exact(fn, rng):
    """Exact GELU, 0.5·x·(1 + erf(x/√2)), on random shapes, float32 and float64."""
    _check_form(fn, rng, "none")


@exercise("10.gelu-tanh", points=1, uses="gelu_tanh")
def check_gelu_tanh(fn, rng):
    """The tanh approximation of GELU (distinguishable from the exact form)."""
    _check_form(fn, rng, "tanh")


def _pair(cls, d_model, d_ff, rng, case):
    """The learner's module with the reference's (random) weights copied in, and the reference."""
    reference = Reference(d_model, d_ff, activation="gelu").eval()
    with torch.no_grad():
        for p in reference.parameters():
            p.copy_(torch.randn(p.shape, generator=rng) / d_model ** 0.5)
    mine = cls(d_model, d_ff)
    expect(isinstance(mine, nn.Module), f"[{case}] FeedForward should subclass nn.Module")
    for name, shape in (("linear1", (d_ff, d_model)), ("linear2", (d_model, d_ff))):
        layer = getattr(mine, name, None)
        expect(isinstance(layer, nn.Linear), f"[{case}] expected a member `{name}` that is an nn.Linear")
        expect(tuple(layer.weight.shape) == shape,
               f"[{case}] {name}.weight has shape {tuple(layer.weight.shape)}, expected {shape} "
               f"(nn.Linear(in, out) stores weight as (out, in))")
    try:
        mine.load_state_dict(reference.state_dict())
    except RuntimeError as error:
        raise CheckFailed(f"[{case}] could not copy the course weights into yours (members linear1, "
                          f"linear2 with biases and nothing else): {error}") from None
    return mine.eval(), reference


@exercise("10.feedforward", points=2, uses="FeedForward")
def check_feedforward(cls, rng):
    """FeedForward(d_model, d_ff) with GELU, the course's weights copied in, any leading dims."""
    for case_number in range(4):
        d_model, d_ff = _draw(rng, 1, 9), _draw(rng, 1, 33)
        leading = [(), (5,), (2, 3), (2, 3, 4)][case_number]
        case = f"case {case_number}: d_model={d_model}, d_ff={d_ff}, x {leading + (d_model,)}"
        mine, reference = _pair(cls, d_model, d_ff, rng, case)
        x = torch.randn(*leading, d_model, generator=rng) * 2
        with torch.no_grad():
            expect_close(case, mine(x), reference(x), atol=1e-5)
    case = "position-wise: token 2 alone must give the same output as token 2 in its sequence"
    mine, _ = _pair(cls, 8, 32, rng, case)
    x = torch.randn(3, 6, 8, generator=rng)
    with torch.no_grad():
        expect_close(case, mine(x[:, 2]), mine(x)[:, 2], atol=1e-5)
    case = "the activation must be exact GELU (not ReLU, not the tanh form)"
    mine, reference = _pair(cls, 4, 64, rng, case)
    with torch.no_grad():
        for p in (mine.linear2.weight, reference.linear2.weight):
            p.fill_(1.0)                    # sum the hidden units so their activation's form shows
        x = torch.linspace(-1.5, 1.5, 24).view(6, 4)
        expect_close(case, mine(x), reference(x), atol=1e-5)
