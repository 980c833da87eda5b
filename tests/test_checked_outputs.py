"""Checked outputs are exact facts only.

nbval compares the output of every `# NBVAL_CHECK_OUTPUT` cell character by character, on whatever
CPU runs the tests. A number that comes from training, sampling or timing changes with the CPU (and
with the seed), so such numbers are printed in unchecked cells and asserted by `claim(...)` with a
margin; a checked cell prints shapes, counts, identities, and the outcome of claims.

The evidence is `docs/sweep/checked_outputs.json`, written by the sweep from its run ledger
(`docs/sweep/runs/`, which records each checked cell's text as each run ends): per lesson and
checked cell, the text printed in every run (seeds 0-9 and SEED=1 with 2 threads for a full
`course sweep`). Regenerate it with

    course sweep                      # every lesson, every run (writes the file at the end)
    course sweep --only 17            # one lesson: replaces that lesson's entry only
    course sweep --collect            # from the ledger, running nothing

after changing a checked cell (its source digest is recorded, so a stale entry fails here).
"""
from __future__ import annotations

import json

import nbformat
import pytest

from course_tools import ROOT
from course_tools.manifest import Lesson
from course_tools.sweep.checked_outputs import (CHECK_MARKER, CHECKED_OUTPUTS, checked_cells,
                                                checked_output_problems, digest, output_text,
                                                write_checked_outputs)
from course_tools.sweep.ledger import Run, record_run

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture(scope="module")
def recorded():
    assert CHECKED_OUTPUTS.exists(), f"{CHECKED_OUTPUTS.relative_to(ROOT)} missing: run `course sweep`"
    return json.loads(CHECKED_OUTPUTS.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_checked_cells_printed_one_text_in_every_sweep_run(path, recorded):
    nb = nbformat.read(path, as_version=4)
    problems = checked_output_problems({path.stem: nb}, recorded)
    assert not problems, "\n".join(problems)


def test_no_checked_cells_outside_the_swept_lessons():
    """The sweep runs notebooks/ only: a checked cell elsewhere would have no evidence."""
    for folder in ("solutions", "exercises"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            assert CHECK_MARKER not in path.read_text(encoding="utf-8"), path


# --- the checker on planted counter-examples ----------------------------------------------------

SOURCE = f"# {CHECK_MARKER}\nprint(accuracy)"
RUNS = [Run("seed 0", 0), Run("seed 1", 1), Run("seed 1, 2 threads", 1, threads=2)]


def _notebook(text: str, source: str = SOURCE, cell_id: str = "c0ffee00"):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(source, execution_count=2)
    cell.id = cell_id
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    nb.cells = [nbformat.v4.new_code_cell("accuracy = 0.86", execution_count=1), cell]
    return nb


def _data(texts: dict[str, str], source: str = SOURCE, cell_id: str = "c0ffee00", runs=RUNS):
    """What `write_checked_outputs` records for one lesson whose checked cell printed `texts`."""
    return {"runs": {r.name: {"seed": r.seed, "threads": r.threads} for r in runs},
            "lessons": {"99_fake": {"runs": sorted(texts), "cells": {cell_id: {
                "source": digest(source), "texts": {digest(t): t for t in texts.values()},
                "runs": {name: digest(t) for name, t in texts.items()}}}}}}


def test_checker_accepts_one_text_everywhere():
    same = {r.name: "accuracy > 0.75: True\n" for r in RUNS}
    assert checked_output_problems({"99_fake": _notebook("accuracy > 0.75: True\n")}, _data(same)) == []


def test_checker_reports_a_text_that_moves_with_the_seed_or_the_threads():
    # lesson 17 before the fix: a trained accuracy printed in a checked cell
    moving = {"seed 0": "held-out NSP accuracy: 0.86\n", "seed 1": "held-out NSP accuracy: 0.86\n",
              "seed 1, 2 threads": "held-out NSP accuracy: 0.96\n"}
    problems = checked_output_problems({"99_fake": _notebook("held-out NSP accuracy: 0.86\n")}, _data(moving))
    assert len(problems) == 1 and "different texts" in problems[0] and "0.96" in problems[0], problems


def test_checker_reports_a_stored_output_the_sweep_never_printed():
    same = {r.name: "accuracy > 0.75: True\n" for r in RUNS}
    problems = checked_output_problems({"99_fake": _notebook("accuracy > 0.75: False\n")}, _data(same))
    assert len(problems) == 1 and "stored output" in problems[0], problems


def test_checker_reports_stale_missing_and_thin_records():
    same = {r.name: "x\n" for r in RUNS}
    edited = _notebook("x\n", source=SOURCE + "  # edited")
    assert any("source changed" in p for p in checked_output_problems({"99_fake": edited}, _data(same)))
    assert any("no recorded sweep runs" in p
               for p in checked_output_problems({"99_fake": _notebook("x\n")}, {"runs": {}, "lessons": {}}))
    renamed = checked_output_problems({"99_fake": _notebook("x\n", cell_id="beef0000")}, _data(same))
    assert any("not recorded" in p for p in renamed) and any("no longer a checked cell" in p for p in renamed)
    one_thread = {"seed 0": "x\n", "seed 1": "x\n"}
    assert any("more than one thread" in p
               for p in checked_output_problems({"99_fake": _notebook("x\n")}, _data(one_thread, runs=RUNS[:2])))


def _record(nb) -> dict:
    """A ledger record of one run whose executed notebook is `nb` (what the sweep writes)."""
    return {"seconds": 1.0, "claims held": "yes", "error": "", "claims": [], "checked": checked_cells(nb)}


def test_sweep_records_the_ledger_and_the_checker_catches_a_moving_cell(tmp_path, monkeypatch):
    """The whole path: run records in the ledger -> the JSON file -> the checker."""
    from course_tools.sweep import ledger as sweep_ledger   # where the ledger reads a lesson's code digest
    lesson = Lesson(99, "fake", "?", "?")
    monkeypatch.setattr(sweep_ledger, "code_digest", lambda lesson: "d1")
    ledger = tmp_path / "runs"
    for run, text in zip(RUNS, ["0.86\n", "0.86\n", "0.96\n"]):
        record_run(lesson, run, "d1", _record(_notebook(text)), ledger)
    path = write_checked_outputs([lesson], RUNS, ledger, tmp_path / "checked.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    entry = data["lessons"]["99_fake"]
    assert entry["runs"] == sorted(r.name for r in RUNS)
    assert set(entry["cells"]["c0ffee00"]["texts"].values()) == {"0.86\n", "0.96\n"}
    problems = checked_output_problems({"99_fake": _notebook("0.86\n")}, data)
    assert any("different texts" in p for p in problems), problems

    # fixed: all runs print the same text; rewriting replaces this lesson's entry, keeps the others'
    data["lessons"]["98_other"] = {"runs": [], "cells": {}}
    path.write_text(json.dumps(data), encoding="utf-8")
    for run in RUNS:
        record_run(lesson, run, "d1", _record(_notebook("True\n")), ledger)
    data = json.loads(write_checked_outputs([lesson], RUNS, ledger, path).read_text(encoding="utf-8"))
    assert "98_other" in data["lessons"]
    assert checked_output_problems({"99_fake": _notebook("True\n")}, data) == []
    assert write_checked_outputs([Lesson(97, "absent", "?", "?")], RUNS, ledger, path) is None

    # a record of other code starts the ledger afresh: the older runs are stale, not mixed in
    record_run(lesson, RUNS[0], "d2", _record(_notebook("False\n")), ledger)
    monkeypatch.setattr(sweep_ledger, "code_digest", lambda lesson: "d2")
    data = json.loads(write_checked_outputs([lesson], RUNS, ledger, path).read_text(encoding="utf-8"))
    assert data["lessons"]["99_fake"]["runs"] == ["seed 0"]


def test_output_text_is_what_nbval_compares():
    cell = nbformat.v4.new_code_cell(SOURCE, execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="at 0x7f00dead\n"),
                    nbformat.v4.new_output("execute_result", data={"text/plain": "42"}, execution_count=1)]
    assert output_text(cell) == "at 0xADDRESS\n42\n"   # sanitised as tests/sanitize.cfg says
    nb = nbformat.v4.new_notebook()
    nb.cells = [cell, nbformat.v4.new_code_cell("print(1)")]
    assert list(checked_cells(nb).values()) == [{"source": digest(SOURCE), "text": "at 0xADDRESS\n42\n"}]
    cell.execution_count = None   # a run that stopped before the checked cell
    assert checked_cells(nb)[cell.id]["text"] == "[not executed]\n"


# --- a checked cell asserts nothing the ledger does not claim --------------------------------------
#
# A checked cell may print the outcome of a comparison ("copy accuracy above 0.9: True"). That line is
# compared on every CPU, so it is an assertion too: its threshold must be the threshold of one of the
# lesson's claims (`docs/sweep/claims.csv`), in any of the forms a claim states it - the value, its
# complement (accuracy above 0.9 = error below 0.1), its log10 ("> 10x" = log10 > 1), its inverse -
# or a number that the claim's statement names ("≈ 0.15" for |share - 0.15|).

import math
import re

import pandas as pd

from course_tools.sweep.results import CLAIMS_CSV

_COMPARISON = re.compile(r"(>=|<=|>|<|≥|≤|\babove|\bbelow|\bwithin|at least|at most|more than|\bunder|\bover|≈)\s*"
                         r"(\d+(?:\.\d+)?(?:e-?\d+)?)\s*(x|×|%|-fold)?")


def printed_thresholds(text: str) -> list[tuple[str, float, str]]:
    """(the comparison as printed, its number, its unit) for every True/False a checked text prints."""
    found = []
    for segment in re.split(r"(?<=True)|(?<=False)", text):
        if re.search(r"\b(True|False)\b", segment):
            found += [(m.group(0), float(m.group(2)), m.group(3) or "") for m in _COMPARISON.finditer(segment)]
    return found


def unclaimed_thresholds(text: str, claims: list[dict]) -> list[str]:
    thresholds = []
    for row in claims:
        try:
            thresholds.append(float(row["threshold"]))
        except (TypeError, ValueError):
            pass
    statements = [str(row["statement"]) for row in claims]
    missing = []
    for shown, number, unit in printed_thresholds(text):
        values = {number, number / 100} if unit == "%" else {number}
        forms = set()
        for v in values:
            forms |= {v, 1 - v, v - 1} | ({math.log10(v), -math.log10(v), 1 / v} if v > 0 else set())
        named = any(re.search(rf"(?<![\d.]){re.escape(f'{number:g}')}(?![\d])", s) for s in statements)
        if not named and not any(math.isclose(f, t, rel_tol=1e-9, abs_tol=1e-12) for f in forms for t in thresholds):
            missing.append(shown)
    return missing


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_threshold_a_checked_cell_prints_is_a_claims_threshold(path):
    table = pd.read_csv(CLAIMS_CSV, dtype={"lesson": str})
    claims = table[table["lesson"] == path.stem[:2]].to_dict("records")
    nb = nbformat.read(path, as_version=4)
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and CHECK_MARKER in cell.source:
            problems += [f"cell {index}: {shown!r}" for shown in unclaimed_thresholds(output_text(cell), claims)]
    assert not problems, (f"{path.stem}: a checked cell prints a comparison no claim of the lesson makes "
                          f"(assert it with claim(...) at that threshold, or print the claim's own): {problems}")


def test_a_printed_threshold_no_claim_makes_is_caught():
    claims = [{"statement": "2 heads: pair error rate of the kept run", "threshold": 0.1},
              {"statement": "selected share of ordinary tokens: |share - 0.15|", "threshold": 0.01},
              {"statement": "d_k=1024: geometric mean, scaled / unscaled (log10; 1 = 10x)", "threshold": 1.0}]
    assert unclaimed_thresholds("kept run: pair accuracy above 0.95: True", claims) == ["above 0.95"]
    assert unclaimed_thresholds("median > 5x smaller: True", claims) == ["> 5x"]
    assert unclaimed_thresholds("kept run: pair accuracy above 0.9: True", claims) == []     # error < 0.1
    assert unclaimed_thresholds("selected share ≈ 0.15 (within 0.01): True", claims) == []
    assert unclaimed_thresholds("geometric mean > 10x smaller: True", claims) == []          # log10 > 1
