"""Learning-rate schedules (lesson 09): linear warm-up then linear decay (BERT), and Noam's
inverse square root (Vaswani et al. 2017).

The functions give the learning rate at a step; `make_scheduler` wraps them in
`torch.optim.lr_scheduler.LambdaLR`, which calls its lambda with 0, 1, 2, ... (the number of
`scheduler.step()` calls so far) and multiplies the optimizer's base lr by the result.
"""
from __future__ import annotations


from torch.optim.lr_scheduler import LambdaLR

from .validation import is_int  # an int or a numpy integer, not a bool
from .validation import require_int, require_positive, require_positive_int


def linear_warmup_decay(step: int, warmup_steps: int, total_steps: int, peak_lr: float = 1.0) -> float:
    """peak_lr · step / warmup_steps while step < warmup_steps, then a straight line down to 0
    at total_steps (and 0 after). Step counts from 0, so the very first update has lr 0 - the
    same formula as Hugging Face's `get_linear_schedule_with_warmup`."""
    require_int("warmup_steps", warmup_steps, minimum=0)
    if not is_int(total_steps) or total_steps < max(warmup_steps, 1):
        raise ValueError(f"total_steps: expected an int >= warmup_steps={warmup_steps} and >= 1, "
                         f"got {total_steps!r}")
    if step < warmup_steps:
        return peak_lr * step / warmup_steps
    return peak_lr * max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


def noam(step: int, d_model: int, warmup_steps: int, factor: float = 1.0) -> float:
    """factor · d_model^-0.5 · min(step^-0.5, step · warmup_steps^-1.5), step counted from 1.

    Rises linearly for `warmup_steps` steps, peaks at step = warmup_steps with
    factor · (d_model · warmup_steps)^-0.5 (6.99e-4 for d_model=512, warm-up 4000), then
    decays as 1/√step.
    """
    require_positive_int("d_model", d_model)   # d_model ** -0.5 of a negative one is complex
    require_positive("factor", factor)         # a negative lr would climb the loss
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


SCHEDULES = ("constant", "linear", "noam")


def make_scheduler(optimizer, kind: str, **kw) -> LambdaLR:
    """A LambdaLR; call `scheduler.step()` after every `optimizer.step()`.

    kind="constant": base lr, after an optional linear warm-up of `warmup_steps` steps
                     (lr · (s+1)/(warmup_steps+1) at step s < warmup_steps; default 0 = none).
    kind="linear":   `warmup_steps`, `total_steps`; the optimizer's lr is the peak.
    kind="noam":     `d_model`, `warmup_steps`; the lr is the paper's formula times the
                     optimizer's lr (create the optimizer with lr=1.0 for the exact values).
                     LambdaLR's step 0 is Noam's step 1.
    """
    if kind == "constant":
        warmup = kw.pop("warmup_steps", 0)
        _no_extra(kw)
        return LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / (warmup + 1)) if warmup else 1.0)
    if kind == "linear":
        warmup, total = kw.pop("warmup_steps"), kw.pop("total_steps")
        _no_extra(kw)
        linear_warmup_decay(0, warmup, total)  # validates the arguments now, not at step 0
        return LambdaLR(optimizer, lambda s: linear_warmup_decay(s, warmup, total))
    if kind == "noam":
        d_model, warmup = kw.pop("d_model"), kw.pop("warmup_steps")
        factor = kw.pop("factor", 1.0)
        _no_extra(kw)
        noam(1, d_model, warmup, factor)
        return LambdaLR(optimizer, lambda s: noam(s + 1, d_model, warmup, factor))
    raise ValueError(f"kind: expected one of {SCHEDULES}, got {kind!r}")


def _no_extra(kw):
    if kw:
        raise ValueError(f"make_scheduler: unexpected arguments {sorted(kw)}")
