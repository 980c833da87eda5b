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
_NUMBER = re.compile(r"(?<![\w.\-/^_{\\])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w.]*\d)"
                     r"(?:\s?(%|k\b|M\b|B\b|×|x\b))?")
_SCALE = {"k": 1e3, "M": 1e6, "B": 1e9}
# Words before a number that make it a name, not a measurement.
_NAMING = re.compile(r"(?:table|figure|fig\.|section|§|lesson|lessons|seed|seeds|step|layer|"
                     r"equation|eq\.|cell|part|chapter|appendix|round|version|python|torch)\s*$", re.I)
# A sentence that cites its source: its numbers are quoted, not measured here.
_CITES = re.compile(r"et al\.|\breport(?:s|ed)?\b|\bpaper\b|\bTable \d|\bthe authors\b|\bpublished\b", re.I)
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
    return short_answers_in(nb.cells).get("en", "")


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
    """Numbers written in the notebook's code cells (configuration constants)."""
    values = set()
    for cell in nb.cells:
        if cell.cell_type == "code":
            for raw in re.findall(r"(?<![\w.])\d[\d_]*(?:\.\d+)?(?:e[-+]?\d+)?", cell.source):
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
