"""Numbers in a lesson's prose come from the ledger (course_tools.answer_numbers, "numbers bound to
the ledger"): every marker is checked against `docs/sweep/claims.csv` (a range quoted contains the
sweep's range, a bound holds at the worst run), and every number the prose states - in both
languages, short answers and pitfalls included - carries a marker, is a constant of the lesson's
code, or sits in a sentence that cites its source."""
from __future__ import annotations

import re

import nbformat
import pytest

from course_tools.answer_numbers import (Binding, bindings, code_numbers, ledger_problem, stated_numbers,
                                         without_bound_numbers)
from course_tools.manifest import LESSONS
from course_tools.sweep.checked_outputs import CHECK_MARKER
from course_tools.sweep.results import CLAIMS_CSV, load_claims_csv

LESSONS_WITH_PROSE = [lesson for lesson in LESSONS if lesson.number != 0]
BOUND = "⟨n⟩"


@pytest.fixture(scope="module")
def claims():
    table = load_claims_csv()
    return {lesson: rows.to_dict("records") for lesson, rows in table.groupby("lesson")}


def _prose(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "markdown"]


def _checked_outputs(nb) -> str:
    texts = []
    for cell in nb.cells:
        if cell.cell_type == "code" and CHECK_MARKER in cell.source:
            for out in cell.get("outputs", []):
                text = out.get("text", "") or out.get("data", {}).get("text/plain", "")
                texts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(texts)


def problems(nb, rows: list[dict], coverage: bool = True) -> list[str]:
    """What is wrong with the numbers of one notebook's prose (empty: all bound and true);
    `coverage`: also every stated number without a marker."""
    found = []
    printed = _checked_outputs(nb)
    code = code_numbers(nb)
    for text in _prose(nb):
        marked, orphans = bindings(text)
        found += [f"a marker after no number: …{o}" for o in orphans]
        for binding in marked:
            if binding.kind == "ledger":
                why = ledger_problem(binding, rows)
                if why:
                    found.append(f"{why}: …{binding.context}…")
            elif binding.kind == "printed" and binding.text.lstrip("+") not in printed:
                found.append(f"{binding.text} is not printed by a checked output (NBVAL_CHECK_OUTPUT): …{binding.context}…")
        if not coverage:
            continue
        for number in stated_numbers(without_bound_numbers(text, BOUND)):
            if number.value in code:
                continue   # a setting of the lesson's code
            found.append(f"{number.text!r} has no source marker: “{number.sentence[:110]}”")
    return found


@pytest.mark.parametrize("lesson", LESSONS_WITH_PROSE, ids=[l.stem for l in LESSONS_WITH_PROSE])
def test_every_marker_in_the_prose_agrees_with_the_ledger(lesson, claims):
    nb = nbformat.read(lesson.notebook, as_version=4)
    found = problems(nb, claims.get(f"{lesson.number:02d}", []), coverage=False)
    assert not found, f"{lesson.stem}: {len(found)} number(s):\n" + "\n".join(found[:40])


@pytest.mark.parametrize("lesson", LESSONS_WITH_PROSE, ids=[l.stem for l in LESSONS_WITH_PROSE])
def test_every_number_in_the_prose_is_bound_and_true(lesson, claims):
    nb = nbformat.read(lesson.notebook, as_version=4)
    found = problems(nb, claims.get(f"{lesson.number:02d}", []))
    assert not found, f"{lesson.stem}: {len(found)} number(s):\n" + "\n".join(found[:40])


ROWS = [{"statement": "best held-out loss: untied − tied (nats)", "min": 0.127, "max": 0.225},
        {"statement": "lr 0.01: plain-32 minus residual-32 final loss", "min": 0.386, "max": 0.692},
        {"statement": "share of masked tokens", "min": 0.148, "max": 0.151}]


def _nb(markdown: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(markdown), nbformat.v4.new_code_cell("steps = 3000")]
    return nb


@pytest.mark.parametrize("text", [
    "Tied wins by 0.15–0.23<!--n: ledger best held-out--> nats.",               # the range is older: stale
    "The gap is more than 0.4<!--n: ledger lr 0.01: plain-32--> nats.",          # the bound fails at 0.386
    "The gap is 0.3<!--n: ledger best held-out--> nats.",                         # outside the range
    "About 15.3%<!--n: ledger share of masked--> of tokens are masked.",          # outside, in percent
    "The gap is 0.72 nats after 3000 steps.",                                      # no marker
    "The gap stays under 0.6<!--n: ledger lr 0.01--> nats.",                      # upper bound fails at 0.692
    "The gap is 0.72 nats, so it is reported, not claimed.",                      # our own "reported" is no citation
    "差距为0.72 nats。",                                                          # a number right after a Chinese character
    "The gap is large<!--n: ledger best held-out-->.",                             # a marker after no number
])
def test_a_planted_stale_or_unbound_number_fails(text):
    assert problems(_nb(text), ROWS)


@pytest.mark.parametrize("text", [
    "Tied wins by 0.12–0.23<!--n: ledger best held-out--> nats after 3000 steps.",
    "The gap is more than 0.38<!--n: ledger lr 0.01: plain-32--> nats; 0.39–0.69<!--n: ledger lr 0.01--> nats.",
    "About 15%<!--n: ledger share of masked--> of the 30,522<!--n: constant--> word pieces.",
    "BERT reports 84.6 on MNLI (Devlin et al., Table 1).",
    "超过 0.38<!--n: ledger lr 0.01: plain-32--> 奈特。",
])
def test_a_bound_true_number_passes(text):
    assert problems(_nb(text), ROWS) == []


def test_a_marker_binds_the_number_or_range_right_before_it():
    (one,), _ = bindings("at least 0.95<!--n: ledger x--> accuracy")
    assert (one.low, one.high, one.bound, one.decimals) == (None, 0.95, "lower", 2)
    (two,), _ = bindings("from −0.021 to +0.124<!--n: ledger y-->")
    assert isinstance(two, Binding) and (two.low, two.high) == (-0.021, 0.124)


# --- code comments ---------------------------------------------------------------------------------
#
# A comment that states what the sweep measured goes stale the day the sweep moves, and no marker can
# sit in code. So comments name the claim (its range is in docs/sweep/claims.csv and the README's
# table) instead of quoting it: a comment that speaks of runs, seeds or the sweep states no measured
# decimal, percentage or ratio other than a constant of the lesson's code.

_RUN_WORDS = re.compile(r"\b(sweep|runs?|seeds?|measured|moved?|moves)\b", re.I)
_MEASURED = re.compile(r"(?<![\w.])(\d+\.\d+|\d+(?:\.\d+)?\s?%|\d+(?:\.\d+)?\s?(?:x|×)(?!\w))")


def comment_problems(nb) -> list[str]:
    import io
    import tokenize
    code = code_numbers(nb)
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(cell.source).readline))
        except (tokenize.TokenError, IndentationError, SyntaxError):
            continue
        blocks, last_row = [], -2      # a comment runs on over the lines right below it: one text
        for token in tokens:
            if token.type == tokenize.COMMENT:
                if token.start[0] == last_row + 1 and blocks:
                    blocks[-1] += "\n" + token.string
                else:
                    blocks.append(token.string)
                last_row = token.start[0]
        for text in blocks:
            if not _RUN_WORDS.search(text):
                continue
            for match in _MEASURED.finditer(text):
                value = float(re.sub(r"[%x×\s]", "", match.group(1)))
                if value in code or value / 100 in code:
                    continue
                found.append(f"cell {index}: {match.group(1)!r} in “{' '.join(text.split())[:140]}”")
    return found


@pytest.mark.parametrize("lesson", LESSONS_WITH_PROSE, ids=[l.stem for l in LESSONS_WITH_PROSE])
def test_code_comments_name_the_claim_instead_of_quoting_the_sweep(lesson):
    found = comment_problems(nbformat.read(lesson.notebook, as_version=4))
    assert not found, (f"{lesson.stem}: a comment quotes a measured number (name the claim; its range is in "
                       f"docs/sweep/claims.csv):\n" + "\n".join(found))


def test_a_comment_quoting_the_sweep_fails():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("steps = 3000\n# the gap moved between 0.19 and 0.29 over the sweep\nx = 1")]
    assert comment_problems(nb)
    nb.cells = [nbformat.v4.new_code_cell("steps = 3000\n# 3000 steps in every run\nx = 1")]
    assert comment_problems(nb) == []


# --- the interview card ----------------------------------------------------------------------------
#
# The card (`metadata.course.interview`: say this, the correction, each item's explanation, the
# labels of the numbers to quote) is what the cheat sheet and `course interview` show. It carries no
# markers; instead every number it states is one the lesson's prose binds (a marked number or range
# end), a constant of the code, or one the sentence cites. Questions, derivations (arithmetic shown
# step by step), choice options (distractors are wrong on purpose) and the folklore (quoted) are
# exempt.

_CARD_EXEMPT = re.compile(r"question|derivation|options|folklore|\.(id|cell|claim|source|kind|unit|answer)$")


def _card_texts(value, path=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _card_texts(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _card_texts(item, f"{path}[{index}]")
    elif isinstance(value, str) and not _CARD_EXEMPT.search(path):
        yield path, value


def card_problems(nb) -> list[str]:
    sourced = {round(abs(v), 6) for v in code_numbers(nb)}
    for text in _prose(nb):
        for binding in bindings(text)[0]:
            sourced |= {round(abs(v), 6) for v in (binding.low, binding.high) if v is not None}
    card = nb.metadata.get("course", {}).get("interview", {})
    found = []
    for path, text in _card_texts(card):
        for number in stated_numbers(text):
            if any(round(v, 6) in sourced for v in (number.value, number.value / 100, number.value * 100)):
                continue
            found.append(f"{path}: {number.text!r} in “{number.sentence[:120]}”")
    return found


@pytest.mark.parametrize("lesson", LESSONS_WITH_PROSE, ids=[l.stem for l in LESSONS_WITH_PROSE])
def test_the_interview_card_states_only_numbers_the_prose_binds(lesson):
    found = card_problems(nbformat.read(lesson.notebook, as_version=4))
    assert not found, (f"{lesson.stem}: the card states a number its lesson's prose does not bind (quote the "
                       f"bound range, or bind the number in the prose first):\n" + "\n".join(found))


def test_a_card_number_the_prose_does_not_bind_fails():
    nb = _nb("Tied wins by 0.12–0.23<!--n: ledger best held-out--> nats.")
    nb.metadata["course"] = {"interview": {"measured": {"en": "Tied wins by about 0.2 nats."}}}
    assert card_problems(nb)
    nb.metadata["course"] = {"interview": {"measured": {"en": "Tied wins by 0.12–0.23 nats."}}}
    assert card_problems(nb) == []
