"""Graded checks for lesson 09: warm-up schedules the lesson did not build (cosine with a floor,
fairseq's inverse square root). The references are written here, from the definitions."""
import math
import numbers

import torch

from ..grading import CheckFailed, exercise, randint

_SCHEDULERS = ("torch.optim.lr_scheduler:CosineAnnealingLR", "torch.optim.lr_scheduler:CosineAnnealingWarmRestarts",
               "torch.optim.lr_scheduler:OneCycleLR", "course_lib.schedules:make_scheduler")


def cosine_reference(step, warmup, total, peak=1.0, floor=0.0):
    if step < warmup:
        return peak * step / warmup
    progress = min(1.0, (step - warmup) / (total - warmup))
    return floor + 0.5 * (peak - floor) * (1.0 + math.cos(math.pi * progress))


def inverse_sqrt_reference(step, warmup, peak, init=0.0):
    if step <= warmup:
        return init + (peak - init) * step / warmup
    return peak * math.sqrt(warmup / step)


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


def _uniform(rng, low, high):
    return float(torch.empty(1).uniform_(low, high, generator=rng))


def _cosine_hint(step, warmup, total, floor):
    if step < warmup:
        return "during the warm-up lr = peak_lr * step / warmup_steps (from 0 at step 0, not from min_lr)"
    if step <= total:
        return ("after the warm-up the cosine runs over total_steps - warmup_steps: "
                "min_lr + 0.5 * (peak_lr - min_lr) * (1 + cos(pi * (step - warmup_steps) / (total_steps - warmup_steps)))")
    return "after total_steps the lr stays min_lr (the cosine must not come back up)"


@exercise("09.warmup-cosine", points=2, uses="warmup_cosine", forbids=_SCHEDULERS)
def check_cosine(fn, rng):
    """Linear warm-up then a half-cosine to a floor, at random and edge steps."""
    # hint cases first: the worked example, a floor, the middle of the decay, after the end
    for step, expected in ((0, 0.0), (5, 0.5), (10, 1.0), (60, 0.55), (110, 0.1), (500, 0.1)):
        _expect_lr(f"worked example: step={step}, warmup_steps=10, total_steps=110, peak_lr=1.0, min_lr=0.1",
                   fn(step, 10, 110, 1.0, 0.1), expected, _cosine_hint(step, 10, 110, 0.1))
    for trial in range(8):
        warmup = 0 if trial == 0 else randint(rng, 1, 61)
        total = warmup + randint(rng, 2, 301)
        peak = 10 ** _uniform(rng, -5, -2)
        floor = 0.0 if trial in (1, 2) else peak * _uniform(rng, 0.01, 0.5)
        steps = {0, 1, max(warmup - 1, 0), warmup, warmup + 1, (warmup + total) // 2, total - 1, total,
                 total + 1, total + randint(rng, 1, total + 1)}
        steps |= {randint(rng, 0, 2 * total + 1) for _ in range(6)}
        for step in sorted(steps):
            case = (f"step={step}, warmup_steps={warmup}, total_steps={total}, peak_lr={peak:.3g}, "
                    f"min_lr={floor:.3g}")
            hint = _cosine_hint(step, warmup, total, floor)
            if warmup == 0:
                hint = "with warmup_steps=0 there is no warm-up: step 0 already has peak_lr; " + hint
            _expect_lr(case, fn(step, warmup, total, peak, floor),
                       cosine_reference(step, warmup, total, peak, floor), hint)
    _expect_lr("defaults: step=5, warmup_steps=10, total_steps=100", fn(5, 10, 100),
               cosine_reference(5, 10, 100), "peak_lr defaults to 1.0 and min_lr to 0.0")
    _expect_lr("defaults: step=100, warmup_steps=10, total_steps=100", fn(100, 10, 100),
               cosine_reference(100, 10, 100), "peak_lr defaults to 1.0 and min_lr to 0.0")


def _inverse_hint(step, warmup):
    if step <= warmup:
        return ("up to the peak lr = init_lr + (peak_lr - init_lr) * step / warmup_steps "
                "(steps count from 1; step = warmup_steps gives peak_lr)")
    return "after the peak lr = peak_lr * sqrt(warmup_steps / step) - a square root, continuous at the peak"


@exercise("09.inverse-sqrt", points=1, uses="inverse_sqrt", forbids=_SCHEDULERS)
def check_inverse_sqrt(fn, rng):
    """fairseq's inverse-square-root schedule, set by its peak, with an initial lr."""
    for step, expected in ((1, 2.50075e-4), (4, 1e-3), (16, 5e-4), (100, 2e-4)):
        _expect_lr(f"worked example: step={step}, warmup_steps=4, peak_lr=1e-3, init_lr=1e-7",
                   fn(step, 4, 1e-3, 1e-7), expected, _inverse_hint(step, 4))
    for trial in range(7):
        warmup = randint(rng, 1, 5001)
        peak = 10 ** _uniform(rng, -5, -2)
        init = 0.0 if trial < 2 else peak * 10 ** _uniform(rng, -4, -0.5)
        steps = {1, 2, max(warmup - 1, 1), warmup, warmup + 1, 4 * warmup, 100 * warmup, randint(rng, 1, 20001)}
        for step in sorted(steps):
            case = f"step={step}, warmup_steps={warmup}, peak_lr={peak:.3g}, init_lr={init:.3g}"
            _expect_lr(case, fn(step, warmup, peak, init), inverse_sqrt_reference(step, warmup, peak, init),
                       _inverse_hint(step, warmup))
    _expect_lr("default init_lr: step=1, warmup_steps=10, peak_lr=1e-3", fn(1, 10, 1e-3),
               inverse_sqrt_reference(1, 10, 1e-3), "init_lr defaults to 0.0")
