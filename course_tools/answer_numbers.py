"""Every number a short answer states was measured by its lesson.

A lesson's `## The short answer` is what a learner repeats in an interview, so a number in it must
come from the notebook: printed in one of its stored outputs, inside the range one of its claims
took over the sweep (`docs/sweep/claims.csv`), or set in its code (a configuration constant).
Numbers quoted from a paper are allowed in a sentence that cites it ("Devlin et al. report …",
"Table 5 of the paper"): the citation is the source. `unaccounted_numbers` lists the rest;
`tests/test_short_answers.py` requires it to be empty for every lesson.

What is not checked: integers up to 10 (counts such as "two heads", "3 layers" are read from the
prose around them), years, numbers inside LaTeX math or `code`, and numbers that name something
("Table 5", "lesson 12", "GPT-2", "seed 3").
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import nbformat

from course_lib.quiz import short_answers_in

# A number as prose writes it: 195,840 / 0.13 / 45 / 3.0, with an optional unit that scales it.
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.\-/^{\\])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w.]*\d)"
                     r"(?:\s?(%|k\b|M\b|B\b|×|x\b))?")
_SCALE = {"k": 1e3, "M": 1e6, "B": 1e9}
# Words before a number that make it a name, not a measurement.
_NAMING = re.compile(r"(?:table|figure|fig\.|section|§|lesson|lessons|seed|seeds|step|layer|"
                     r"equation|eq\.|cell|part|chapter|appendix|round|version|python|torch)\s*$", re.I)
# A sentence that cites its source: its numbers are quoted, not measured here.
_CITES = re.compile(r"et al\.|等人|论文|表\s?\d|\breports\b|\breported (?:by|in)\b|\bpaper\b|\bTable \d|\bthe authors\b|\bpublished\b", re.I)
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`", re.S)
_OUTPUT_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", re.I)


@dataclass(frozen=True)
class StatedNumber:
    text: str        # as written, e.g. "45 %" or "0.13"
    value: float     # in the unit written (45 for "45 %")
    decimals: int    # digits after the point as written
    unit: str        # "", "%", "k", "M", "B", "×"
    sentence: str


def short_answer(nb) -> str:
    """The English short answer cell's text, without its heading ('' when the lesson has none)."""
    return strip_markers(short_answers_in(nb.cells, markers=True).get("en", ""))


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?;])\s+(?=[A-Z(*\"'])|\n\s*\n", text) if s.strip()]


def stated_numbers(text: str) -> list[StatedNumber]:
    """The numbers of `text` that must be accounted for (see the module docstring)."""
    found = []
    for sentence in _sentences(_MATH.sub(" ", text)):
        if _CITES.search(sentence):
            continue
        for match in _NUMBER.finditer(sentence):
            raw, unit = match.group(1), match.group(2) or ""
            value = float(raw.replace(",", ""))
            decimals = len(raw.split(".")[1]) if "." in raw else 0
            if decimals == 0 and unit == "" and value <= 10:
                continue
            if decimals == 0 and 1900 <= value <= 2100 and unit == "":
                continue
            if _NAMING.search(sentence[:match.start()]):
                continue
            found.append(StatedNumber(match.group(0).strip(), value, decimals, unit.replace("x", "×"),
                                      sentence.strip()))
    return found


def output_numbers(nb) -> list[float]:
    """Every number printed in the notebook's stored outputs (streams, text results, HTML tables)."""
    values = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            texts = [out.get("text", "")] if out.get("output_type") == "stream" else [
                out.get("data", {}).get(kind, "") for kind in ("text/plain", "text/html", "text/markdown")]
            for text in texts:
                text = "".join(text) if isinstance(text, list) else text
                for raw in _OUTPUT_NUMBER.findall(text):
                    try:
                        values.append(float(raw.replace(",", "")))
                    except ValueError:
                        pass
    return values


def code_numbers(nb) -> set[float]:
    """Numbers written in the notebook's code (configuration constants); comments are prose, not code."""
    from .sweep.ledger import without_comments
    values = set()
    for cell in nb.cells:
        if cell.cell_type == "code":
            for raw in re.findall(r"(?<![\w.])\d[\d_]*(?:\.\d+)?(?:e[-+]?\d+)?", without_comments(cell.source)):
                try:
                    values.add(float(raw.replace("_", "")))
                except ValueError:
                    pass
    return values


def _candidates(number: StatedNumber) -> list[tuple[float, float]]:
    """(value, half a unit of its last digit) in the units a notebook may print it in."""
    half = 0.5 * 10 ** (-number.decimals)
    if number.unit in _SCALE:
        scale = _SCALE[number.unit]
        return [(number.value * scale, half * scale), (number.value, half)]
    if number.unit == "%":
        return [(number.value, half), (number.value / 100, half / 100)]
    return [(number.value, half)]


def accounted_for(number: StatedNumber, outputs: list[float], code: set[float],
                  ranges: list[tuple[float, float]]) -> bool:
    """Whether the number is printed (to its precision), inside a claim's swept range (widened by
    half a unit of its last digit), or a constant in the code."""
    for value, half in _candidates(number):
        tolerance = half * (1 + 1e-9)
        if any(abs(abs(v) - value) <= tolerance for v in outputs):
            return True
        if any(low - tolerance <= value <= high + tolerance or low - tolerance <= -value <= high + tolerance
               for low, high in ranges):
            return True
        if value in code:
            return True
    return False


def unaccounted_numbers(notebook_path, claim_ranges: list[tuple[float, float]]) -> list[StatedNumber]:
    """The numbers of the lesson's English short answer that its notebook never measured."""
    nb = nbformat.read(notebook_path, as_version=4)
    outputs, code = output_numbers(nb), code_numbers(nb)
    return [n for n in stated_numbers(short_answer(nb))
            if not accounted_for(n, outputs, code, [r for r in claim_ranges if not any(map(math.isinf, r))])]


# ------------------------------------------------------------------ numbers bound to the ledger
#
# Every measured number in a lesson's prose says where it comes from, with a marker written right
# after the number or range (an HTML comment: invisible in JupyterLab, the site and the cheat sheet):
#
#   untied minus tied 0.13–0.23<!--n: ledger best held-out loss--> nats   a claim's or report's range
#   more than 0.37<!--n: ledger lr 0.01: plain-32 minus-->                 a bound: holds at the worst run
#   30,522<!--n: constant--> word pieces                                   fixed by construction/config
#   84.6<!--n: cited--> on MNLI (Devlin et al., Table 1)                   quoted from a named source
#   42<!--n: printed--> heads                                              printed by a checked output
#
# `ledger PREFIX` names the lesson's claim (or report) whose statement starts with PREFIX (unique).
# A range must contain the claim's range over the sweep (to the precision written); a number after
# "more than", "at least", "over", "超过", ... must hold at its worst run (a lower bound: ≤ its
# lowest value), after "under", "at most", "below", "不到", ... likewise from above; any other
# single number must lie inside the range. `tests/test_prose_numbers.py` checks every marker against
# `docs/sweep/claims.csv` and that no stated number of the prose is left without one.

MARKER = re.compile(r"<!--\s*n:\s*(ledger|constant|cited|printed)\b\s*(.*?)\s*-->", re.S)
_SIGNED = r"[−\-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[−\-+]?\d+(?:\.\d+)?"
_BEFORE = re.compile(rf"(?:(?P<low>{_SIGNED})\s*(?:–|—|-|to|到|至|~)\s*)?(?P<high>{_SIGNED})\s*(?P<unit>%|×|x)?\s*$")
_LOWER = re.compile(r"(more than|over|above|at least|exceeds?|beyond|≥|>|超过|至少|高于|大于)\s*[~≈]?\s*$", re.I)
_UPPER = re.compile(r"(under|below|at most|less than|fewer than|within|≤|<|不到|低于|小于|至多|不超过)\s*[~≈]?\s*$", re.I)
_LOWER_AFTER = re.compile(r"^\s*(%|×)?\s*(or more|or better|or higher|and more|以上)", re.I)
_UPPER_AFTER = re.compile(r"^\s*(%|×)?\s*(or less|or fewer|or lower|以下|以内)", re.I)


def strip_markers(text: str) -> str:
    """The prose as a reader sees it (what `course interview` prints, what the cheat sheet keeps)."""
    return MARKER.sub("", text)


@dataclass(frozen=True)
class Binding:
    kind: str          # ledger | constant | cited | printed
    target: str        # the claim's statement prefix (ledger)
    low: float | None  # a range's low end (None: a single number)
    high: float
    decimals: int
    unit: str
    bound: str         # "lower", "upper" or "" (a range, or a single number inside it)
    text: str          # the number as written
    context: str


def _number(raw: str) -> tuple[float, int]:
    raw = raw.replace("−", "-").replace(",", "")
    return float(raw), (len(raw.split(".")[1]) if "." in raw else 0)


def bindings(text: str) -> tuple[list[Binding], list[str]]:
    """(the markers of `text` with the numbers they bind, markers that follow no number)."""
    found, orphans = [], []
    for match in MARKER.finditer(text):
        before = text[max(0, match.start() - 60):match.start()]
        number = _BEFORE.search(before)
        if number is None:
            orphans.append(text[max(0, match.start() - 40):match.end()])
            continue
        high, decimals = _number(number.group("high"))
        low = None
        if number.group("low") is not None:
            low, low_decimals = _number(number.group("low"))
            decimals = max(decimals, low_decimals)
        lead, after = before[:number.start()], text[match.end():match.end() + 20]
        bound = ("" if low is not None else "lower" if _LOWER.search(lead) or _LOWER_AFTER.search(after)
                 else "upper" if _UPPER.search(lead) or _UPPER_AFTER.search(after) else "")
        found.append(Binding(match.group(1), match.group(2).strip(), low, high, decimals,
                             (number.group("unit") or "").replace("x", "×"), bound, number.group(0).strip(),
                             text[max(0, match.start() - 80):match.end() + 30].replace("\n", " ")))
    return found, orphans


def ledger_problem(binding: Binding, rows) -> str:
    """Why a `ledger` binding contradicts the lesson's claims table (`rows`: its claims.csv rows,
    statement/min/max), or '' when it holds."""
    matches = [r for r in rows if r["statement"] == binding.target] or \
              [r for r in rows if r["statement"].startswith(binding.target)]
    if len(matches) != 1:
        return (f"{binding.target!r} names {len(matches)} claims of the lesson" if matches
                else f"no claim of the lesson starts with {binding.target!r}")
    row = matches[0]
    low_l, high_l = float(row["min"]), float(row["max"])
    # a share written in percent against a claim stored as a fraction (a claim in "(%)" is percent already)
    scale = (100.0 if binding.unit == "%" and "(%)" not in row["statement"] and max(abs(low_l), abs(high_l)) <= 1.5
             else 1.0)
    low_l, high_l = low_l * scale, high_l * scale
    tol = 0.5 * 10 ** (-binding.decimals) * (1 + 1e-9)   # a range or a value, to the precision written
    exact = 1e-12 * max(1.0, abs(low_l), abs(high_l))     # a bound is a promise: no rounding
    if binding.low is not None:
        lo, hi = sorted((binding.low, binding.high))
        ok = lo <= low_l + tol and hi >= high_l - tol
        say = f"the range {binding.text} does not contain the sweep's {low_l:.4g}–{high_l:.4g}"
    elif binding.bound == "lower":
        ok = binding.high <= low_l + exact
        say = f"the bound {binding.text} fails at the worst run ({low_l:.4g}; range {low_l:.4g}–{high_l:.4g})"
    elif binding.bound == "upper":
        ok = binding.high >= high_l - exact
        say = f"the bound {binding.text} fails at the worst run ({high_l:.4g}; range {low_l:.4g}–{high_l:.4g})"
    else:
        ok = low_l - tol <= binding.high <= high_l + tol
        say = f"{binding.text} lies outside the sweep's {low_l:.4g}–{high_l:.4g}"
    return "" if ok else say


def without_bound_numbers(text: str, placeholder: str = "⟨n⟩") -> str:
    """`text` with every marked number or range (and its marker) replaced by `placeholder`: what
    is left for `stated_numbers` is the prose's unmarked numbers."""
    out, end = [], len(text)
    for match in reversed(list(MARKER.finditer(text))):
        window = max(0, match.start() - 60)
        number = _BEFORE.search(text[window:match.start()])
        start = window + number.start() if number else match.start()
        out.append(text[match.end():end])
        out.append(placeholder)
        end = start
    out.append(text[:end])
    return "".join(reversed(out))
