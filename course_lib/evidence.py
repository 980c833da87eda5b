"""Claims: the asserts of a lesson's evidence cell, with their measured value and threshold kept.

A plain `assert gap > 0.1` says whether a claim held, not by how much. `claim` asserts the same
thing and also records the measured value, the threshold and the margin, so that `course sweep`
can show, for every lesson and every seed, how far each claim was from failing:

    claim("plain-32 trains worse than plain-4 (final loss gap)", gap, ">", 0.1)
    claim_close("notebook attention == course_lib attention", ours, library, atol=1e-6)
    identity("2 of 12 layers are removed", removed, ">=", 2, why="set by the configuration")
    report("distilled minus hard-label accuracy", gap, why="moves with the data draw as much as its size")

Claims are of four kinds, and the sweep ranks only the first:

- **evidence** (`claim`): a measurement that could have come out otherwise (a trained model, a
  random draw). Its distance from the threshold, in units of its range over the sweep's seeds, is
  what the README's robustness table ranks.
- **identity** (`identity`, or `claim(..., kind="identity", why=...)`): a value fixed by
  construction: a count set by the configuration, a property the architecture guarantees,
  arithmetic. Shown in the notebook as "≡ by construction"; a derivation checked, not evidence.
- **deterministic** (`claim(..., kind="deterministic", why=...)`): a measurement of something fixed,
  such as MiniLM's pretrained weights or a closed-form curve: it could have come out otherwise,
  but no seed moves it, so it has no seed range.
- **equality** (`claim_close`): code built in the open against its `course_lib` twin.

A measurement the lesson shows but does not claim — one that moves with the seed too much for a
margin — is recorded with `report` (no threshold, nothing asserted, `why` says why it is not a claim):
the sweep still collects its range over the seeds, so a text that quotes "0.18–0.27 over the sweep"
and an interview question about it are checked against measured numbers, not typed ones.

When the environment variable COURSE_CLAIMS_FILE names a file, every claim is appended to it as
one JSON line (the sweep sets it per run); otherwise claims are only kept in `RECORDED`.

In a notebook, a cell that makes claims ends with a list of them, one line each: ✓ (held) or
✗ (failed), the statement, the measured value and the threshold (`claims_summary`, shown by an
IPython hook installed when this module is imported in a kernel), so an evidence cell reads as
the facts it checked rather than as the bare number its last expression returned. `claim`
still returns the relative margin, a float (`ClaimResult`) that computes as before.
"""
from __future__ import annotations

import html
import json
import math
import os
import operator
import sys

import torch

from .validation import require_choice

_OPERATORS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}

#: The kinds a claim can be declared as (see the module docstring); `claim_close` records "equality".
KINDS = ("evidence", "identity", "deterministic")
#: How each kind is marked in a notebook's list of claims (after ✓ or ✗); `report` records "reported".
KIND_LABELS = {"evidence": "", "identity": "by construction", "deterministic": "fixed input",
               "equality": "", "reported": "reported, not claimed"}

#: Every claim made in this process, in order (what the sweep reads when no file is set).
RECORDED: list[dict] = []


class ClaimFailed(AssertionError):
    """A claim did not hold. Raised explicitly, never by `assert`, so that claims still fail under
    `python -O` (which strips assert statements); an AssertionError, so callers that catch or
    report AssertionError (nbval, `course run`'s "claims held: no") see it as before."""


def _as_float(value) -> float:
    """A number, or a one-element tensor, as a float (NaN allowed: a diverged run fails its claim)."""
    return float(value.item() if isinstance(value, torch.Tensor) else value)


def margin_of(value: float, op: str, threshold: float) -> tuple[float, float]:
    """(absolute, relative) distance from failing; positive when the claim holds.

    The relative margin divides by |threshold| (by 1 when the threshold is 0), so 0.5 means
    "half the threshold away from failing" whatever the claim's unit.
    """
    require_choice("op", op, sorted(_OPERATORS))      # a typo ("=>") would read as "<"
    absolute = value - threshold if op in (">", ">=") else threshold - value
    scale = abs(threshold) if threshold != 0 else 1.0
    return absolute, absolute / scale


def _record(entry: dict) -> None:
    RECORDED.append(entry)
    path = os.environ.get("COURSE_CLAIMS_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")


_SYMBOLS = {">": ">", ">=": "≥", "<": "<", "<=": "≤"}


def _claim_line(entry: dict) -> tuple[str, str, str]:
    """(mark, statement, 'measured V, claimed OP T') of one recorded claim; a claim that is not
    evidence says so before its statement ("by construction: ..." with its reason after)."""
    if entry.get("kind") == "reported":
        return "·", f"[{KIND_LABELS['reported']}] {entry['statement']}", (
            f"measured {entry['value']:.4g} — {entry['why']}")
    mark = "✓" if entry["held"] else "✗"
    numbers = (f"measured {entry['value']:.4g}, claimed {_SYMBOLS.get(entry['op'], entry['op'])} "
               f"{entry['threshold']:.4g}")
    label = KIND_LABELS.get(entry.get("kind", "evidence"), "")
    statement = entry["statement"]
    if label:
        statement = f"[{label}] {statement}"
        if entry.get("why"):
            numbers += f" — {entry['why']}"
    return mark, statement, numbers


class ClaimsSummary:
    """A list of recorded claims as a notebook shows it: one line per claim, ✓ or ✗, statement,
    measured value, threshold (plain text and HTML)."""

    def __init__(self, entries: list[dict]):
        self.entries = list(entries)

    def _title(self) -> str:
        claims = [e for e in self.entries if e.get("kind") != "reported"]
        reported = len(self.entries) - len(claims)
        held = sum(bool(e["held"]) for e in claims)
        noun = "claim" if len(claims) == 1 else "claims"
        title = f"{held} of {len(claims)} {noun} held"
        return title + (f", {reported} reported" if reported else "")

    def __repr__(self) -> str:
        lines = [self._title() + ":"]
        lines += [f"{mark} {statement}: {numbers}" for mark, statement, numbers in map(_claim_line, self.entries)]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        items = []
        for mark, statement, numbers in map(_claim_line, self.entries):
            colour = {"✓": "#1a7f37", "✗": "#cf222e"}.get(mark, "#57606a")
            items.append(f'<li><span style="color: {colour}; font-weight: bold">{mark}</span> '
                         f"{html.escape(statement)}: <code>{html.escape(numbers)}</code></li>")
        return (f'<div class="course-claims"><strong>{html.escape(self._title())}</strong>'
                '<ul style="list-style: none; padding-left: 0.5em; margin: 0.2em 0">'
                + "".join(items) + "</ul></div>")


def claims_summary(entries: list[dict] | None = None) -> ClaimsSummary:
    """The ✓ list of `entries` (default: every claim made so far in this process)."""
    return ClaimsSummary(RECORDED if entries is None else entries)


class ClaimResult(float):
    """What `claim` returns: the relative margin, a float in every computation. As the last value of
    a notebook cell it shows as its ✓ line, not as a bare number (and as nothing when the cell's
    list of claims is shown anyway)."""

    def __new__(cls, relative: float, entry: dict):
        result = super().__new__(cls, relative)
        result.entry = entry
        return result

    def __reduce__(self):
        return float, (float(self),)

    def _ipython_display_(self):
        if _hook_state.get("shell") is not None and any(e is self.entry for e in _cell_claims()):
            return  # the hook lists this cell's claims, this one included, when the cell ends
        from IPython.display import display
        display(ClaimsSummary([self.entry]))


#: The IPython shell the hook is installed in and where the running cell's claims start in RECORDED.
_hook_state: dict = {"shell": None, "start": 0}


def _cell_claims() -> list[dict]:
    return RECORDED[_hook_state["start"]:]


def _before_cell(*_args) -> None:
    _hook_state["start"] = len(RECORDED)


def _after_cell(*_args) -> None:
    entries = _cell_claims()
    _hook_state["start"] = len(RECORDED)
    if entries:
        from IPython.display import display
        display(ClaimsSummary(entries))


def install_notebook_display(shell=None) -> bool:
    """Show each cell's claims as a ✓ list when the cell ends (IPython kernels only; idempotent).
    Called when this module is imported; returns whether a shell was found."""
    if shell is None:
        ipython = sys.modules.get("IPython")   # never import IPython outside a kernel
        shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is None or not hasattr(shell, "events"):
        return False
    previous = getattr(shell, "_course_claims_hooks", None)
    if previous is not None:   # a re-import: replace the old module's hooks
        for event, function in previous:
            try:
                shell.events.unregister(event, function)
            except ValueError:
                pass
    hooks = [("pre_run_cell", _before_cell), ("post_run_cell", _after_cell)]
    for event, function in hooks:
        shell.events.register(event, function)
    shell._course_claims_hooks = hooks
    _hook_state["shell"], _hook_state["start"] = shell, len(RECORDED)
    return True


def claim(statement: str, value, op: str, threshold, *, kind: str = "evidence",
          why: str | None = None) -> ClaimResult:
    """Assert `value op threshold` (op one of > >= < <=); record it; return the relative margin
    (a `ClaimResult`: a float that a notebook shows as the claim's ✓ line).

    `statement` says what is claimed in words; the ClaimFailed (an AssertionError) repeats it with
    the numbers. Raised explicitly: it fails under `python -O` too. `kind` is "evidence" (default),
    "identity" or "deterministic" (see the module docstring); the last two need `why`, one line
    saying what fixes the value. Evidence may carry a `why` too: an evidence claim whose value is
    the same in every sweep run (a trained error rate at its floor of 0 in every run) must say why.
    """
    return _claim(statement, value, op, threshold, kind, why)


def identity(statement: str, value, op: str, threshold, *, why: str) -> ClaimResult:
    """A value fixed by construction (`why` says by what), checked and shown as such; the sweep
    keeps it out of the evidence ranking. Same as `claim(..., kind="identity", why=why)`."""
    return _claim(statement, value, op, threshold, "identity", why)


def _require_statement(statement) -> None:
    if not (isinstance(statement, str) and statement.strip()):
        raise ValueError(f"statement: expected the claim in words (a non-empty str), got {statement!r}")


def _claim(statement: str, value, op: str, threshold, kind: str, why: str | None) -> ClaimResult:
    _require_statement(statement)
    require_choice("kind", kind, (*KINDS, "equality"))
    if kind in ("identity", "deterministic") and not (isinstance(why, str) and why.strip()):
        raise ValueError(f"why: a claim of kind {kind!r} needs a one-line reason (what fixes "
                         f"the value), got {why!r}")
    value, threshold = _as_float(value), _as_float(threshold)
    absolute, relative = margin_of(value, op, threshold)
    held = (not math.isnan(value)) and _OPERATORS[op](value, threshold)
    entry = {"statement": statement, "value": value, "op": op, "threshold": threshold,
             "margin": absolute, "relative_margin": relative, "held": bool(held), "kind": kind}
    if why:
        entry["why"] = why
    _record(entry)
    if not held:
        raise ClaimFailed(f"{statement}: measured {value:.4g}, claimed {op} {threshold:.4g}")
    return ClaimResult(relative, entry)


def report(statement: str, value, *, why: str) -> float:
    """Record a measurement the lesson shows but does not claim (nothing is asserted): `why` says
    why it is not a claim (e.g. "one training run moves it by as much as its size"). The sweep
    collects its range over the seeds like a claim's, so texts and quiz answers can cite it."""
    _require_statement(statement)
    if not (isinstance(why, str) and why.strip()):
        raise ValueError(f"why: a reported number needs a one-line reason why it is not claimed, got {why!r}")
    value = _as_float(value)
    entry = {"statement": statement, "value": value, "op": "", "threshold": math.nan, "margin": math.nan,
             "relative_margin": math.nan, "held": True, "kind": "reported", "why": why}
    _record(entry)
    return value


def claim_close(statement: str, got, expected, atol: float = 1e-6) -> ClaimResult:
    """Assert that two tensors (or numbers) agree within `atol` everywhere; record the largest gap.

    The comparison of a piece built in the open with its `course_lib` twin goes through here, so
    that it is asserted, never only printed.
    """
    _require_statement(statement)
    atol = _as_float(atol)
    # torch.tensor copies: pandas' `.values` may be a read-only NumPy array
    got = torch.tensor(got, dtype=torch.float64) if not isinstance(got, torch.Tensor) else got
    expected = (torch.tensor(expected, dtype=torch.float64)
                if not isinstance(expected, torch.Tensor) else expected)
    if got.shape != expected.shape:
        _record({"statement": statement, "value": math.inf, "op": "<=", "threshold": atol,
                 "margin": -math.inf, "relative_margin": -math.inf, "held": False, "kind": "equality"})
        raise ClaimFailed(f"{statement}: shapes differ, got {tuple(got.shape)}, "
                          f"expected {tuple(expected.shape)}")
    gap = (got.detach().double().cpu() - expected.detach().double().cpu()).abs()
    largest = gap.max().item() if gap.numel() else 0.0
    return _claim(statement + " (largest difference)", largest, "<=", atol, "equality", None)


install_notebook_display()
