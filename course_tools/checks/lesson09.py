"""Graded checks for lesson 09: learning-rate schedules with warm-up."""
import math
import numbers

import torch

from ..grading import CheckFailed, exercise
from course_lib.schedules import linear_warmup_decay as linear_reference
from course_lib.schedules import noam as noam_reference


def _as_float(case, got):
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        raise CheckFailed(f"[{case}] return the learning rate as a float, got {type(got).__name__}")
    return float(got)


def _expect_lr(case, got, expected, hint):
    got = _as_float(case, got)
    if not math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-15):
        raise CheckFailed(f"[{case}] got lr {got:.6g}, expected {expected:.6g} - {hint}")


def _randint(rng, low, high):
    """An int in [low, high]."""
    return int(torch.randint(low, high + 1, (1,), generator=rng))


def _linear_hint(step, warmup, total):
    if step < warmup:
        return "during the warm-up lr = peak_lr * step / warmup_steps (step 0 gives 0)"
    if step <= total:
        return ("from step = warmup_steps (peak_lr) the lr falls on a straight line to 0 at "
                "step = total_steps")
    return "after total_steps the lr stays 0 (not negative)"


@exercise("09.linear-warmup-decay", points=2, uses="linear_warmup_decay")
def check_linear(fn, rng):
    """Linear warm-up then linear decay, at random and edge steps (0, end of warm-up, after the end)."""
    for warmup in [_randint(rng, 1, 50) for _ in range(5)] + [0]:
        total = warmup + _randint(rng, 1, 200)
        peak = 10 ** float(torch.empty(1).uniform_(-5, -2, generator=rng))
        steps = {0, 1, max(warmup - 1, 0), warmup, warmup + 1, (warmup + total) // 2, total - 1,
                 total, total + _randint(rng, 1, 100)}
        steps |= {_randint(rng, 0, total + 50) for _ in range(5)}
        for step in sorted(steps):
            case = f"step={step}, warmup_steps={warmup}, total_steps={total}, peak_lr={peak:.3g}"
            hint = _linear_hint(step, warmup, total)
            if warmup == 0:
                hint = "with warmup_steps=0 there is no warm-up: step 0 already has peak_lr; " + hint
            _expect_lr(case, fn(step, warmup, total, peak),
                       linear_reference(step, warmup, total, peak), hint)
    warmup, total = 10, 100
    _expect_lr("default peak_lr: step=10, warmup_steps=10, total_steps=100", fn(10, warmup, total),
               linear_reference(10, warmup, total), "peak_lr defaults to 1.0")


@exercise("09.noam", points=1, uses="noam")
def check_noam(fn, rng):
    """Noam's inverse-square-root schedule (steps from 1), before, at and after the warm-up."""
    for _ in range(6):
        d_model = [16, 64, 128, 512, 1024][_randint(rng, 0, 4)]
        warmup = _randint(rng, 1, 5000)
        factor = 10 ** float(torch.empty(1).uniform_(-1, 1, generator=rng))
        steps = {1, 2, max(warmup - 1, 1), warmup, warmup + 1, 10 * warmup, _randint(rng, 1, 20000)}
        for step in sorted(steps):
            case = f"step={step}, d_model={d_model}, warmup_steps={warmup}, factor={factor:.3g}"
            hint = ("before the peak lr = factor * d_model^-0.5 * step * warmup_steps^-1.5"
                    if step < warmup else
                    "from the peak on lr = factor * d_model^-0.5 * step^-0.5 (steps count from 1)")
            _expect_lr(case, fn(step, d_model, warmup, factor),
                       noam_reference(step, d_model, warmup, factor), hint)
    _expect_lr("default factor: step=4000, d_model=512, warmup_steps=4000", fn(4000, 512, 4000),
               noam_reference(4000, 512, 4000), "factor defaults to 1.0")
