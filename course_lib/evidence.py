"""Claims: the asserts of a lesson's evidence cell, with their measured value and threshold kept.

A plain `assert gap > 0.1` says whether a claim held, not by how much. `claim` asserts the same
thing and also records the measured value, the threshold and the margin, so that `course sweep`
can show, for every lesson and every seed, how far each claim was from failing:

    claim("plain-32 trains worse than plain-4 (final loss gap)", gap, ">", 0.1)
    claim_close("notebook attention == course_lib attention", ours, library, atol=1e-6)

When the environment variable COURSE_CLAIMS_FILE names a file, every claim is appended to it as
one JSON line (the sweep sets it per run); otherwise claims are only kept in `RECORDED`.
"""
from __future__ import annotations

import json
import math
import os
import operator

import torch

_OPERATORS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}

#: Every claim made in this process, in order (what the sweep reads when no file is set).
RECORDED: list[dict] = []


class ClaimFailed(AssertionError):
    """A claim did not hold. Raised explicitly, never by `assert`, so that claims still fail under
    `python -O` (which strips assert statements); an AssertionError, so callers that catch or
    report AssertionError (nbval, `course run`'s "claims held: no") see it as before."""


def _as_float(name: str, value) -> float:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"{name}: expected a single number, got a tensor of shape {tuple(value.shape)}")
        value = value.item()
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number, got {type(value).__name__}") from None


def margin_of(value: float, op: str, threshold: float) -> tuple[float, float]:
    """(absolute, relative) distance from failing; positive when the claim holds.

    The relative margin divides by |threshold| (by 1 when the threshold is 0), so 0.5 means
    "half the threshold away from failing" whatever the claim's unit.
    """
    absolute = value - threshold if op in (">", ">=") else threshold - value
    scale = abs(threshold) if threshold != 0 else 1.0
    return absolute, absolute / scale


def _record(entry: dict) -> None:
    RECORDED.append(entry)
    path = os.environ.get("COURSE_CLAIMS_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")


def claim(statement: str, value, op: str, threshold) -> float:
    """Assert `value op threshold` (op one of > >= < <=); record it; return the relative margin.

    `statement` says what is claimed in words; the ClaimFailed (an AssertionError) repeats it with
    the numbers. Raised explicitly: it fails under `python -O` too.
    """
    if op not in _OPERATORS:
        raise ValueError(f"op: expected one of {sorted(_OPERATORS)}, got {op!r}")
    value = _as_float("value", value)
    threshold = _as_float("threshold", threshold)
    held = (not math.isnan(value)) and _OPERATORS[op](value, threshold)
    absolute, relative = margin_of(value, op, threshold)
    _record({"statement": statement, "value": value, "op": op, "threshold": threshold,
             "margin": absolute, "relative_margin": relative, "held": bool(held)})
    if not held:
        raise ClaimFailed(f"{statement}: measured {value:.4g}, claimed {op} {threshold:.4g}")
    return relative


def claim_close(statement: str, got, expected, atol: float = 1e-6) -> float:
    """Assert that two tensors (or numbers) agree within `atol` everywhere; record the largest gap.

    The comparison of a piece built in the open with its `course_lib` twin goes through here, so
    that it is asserted, never only printed.
    """
    # torch.tensor copies: pandas' `.values` may be a read-only NumPy array
    got = torch.tensor(got, dtype=torch.float64) if not isinstance(got, torch.Tensor) else got
    expected = (torch.tensor(expected, dtype=torch.float64)
                if not isinstance(expected, torch.Tensor) else expected)
    if got.shape != expected.shape:
        _record({"statement": statement, "value": math.inf, "op": "<=", "threshold": atol,
                 "margin": -math.inf, "relative_margin": -math.inf, "held": False})
        raise ClaimFailed(f"{statement}: shapes differ, got {tuple(got.shape)}, "
                          f"expected {tuple(expected.shape)}")
    gap = (got.detach().double().cpu() - expected.detach().double().cpu()).abs()
    largest = gap.max().item() if gap.numel() else 0.0
    return claim(statement + " (largest difference)", largest, "<=", atol)
