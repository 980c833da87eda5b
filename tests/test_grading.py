"""The grader: untouched exercises score 0, solutions full marks, tampering earns nothing.
(The attack classes of issue 9 are in test_grader_attacks.py, the gradebook in test_grader_class.py.)"""
import hashlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import nbformat
import pytest

from course_lib import ROOT
from course_tools.grader import grade
from course_tools.grader.authoring import load_all
from course_tools.manifest import LESSONS

GRADED = [l for l in LESSONS if l.has_exercise and l.exercise.exists()]


def _grade(path):
    return grade(path, cell_timeout=60)


@pytest.fixture(scope="module")
def reports(selected_lessons):
    """Every exercise and solution of the lessons selected, graded in parallel (each in its own sandbox)."""
    lessons = [l for l in GRADED if l.stem in selected_lessons]
    paths = [str(l.exercise) for l in lessons] + [str(l.solution) for l in lessons]
    with ProcessPoolExecutor(2) as pool:
        return dict(zip(paths, pool.map(_grade, paths)))


@pytest.mark.parametrize("lesson", GRADED, ids=[l.stem for l in GRADED])
def test_untouched_exercise_scores_zero_on_every_item(lesson, reports):
    report = reports[str(lesson.exercise)]
    assert report["items"], "an exercise without graded items"
    assert report["max_score"] > 0
    assert [i["points"] for i in report["items"]] == [0] * len(report["items"]), report


@pytest.mark.parametrize("lesson", GRADED, ids=[l.stem for l in GRADED])
def test_solution_scores_full_marks(lesson, reports):
    report = reports[str(lesson.solution)]
    assert report["score"] == report["max_score"] > 0, report


def test_every_graded_item_is_registered():
    registry = load_all()
    from course_tools.grader import rebuild
    for lesson in GRADED:
        nb = nbformat.read(lesson.exercise, as_version=4)
        ids = [s["id"] for s in rebuild(nb, nb) if s["kind"] == "grade"]
        assert ids and all(i in registry for i in ids), (lesson.stem, ids)
        assert all(i.startswith(f"{lesson.number:02d}.") for i in ids), ids


# ------------------------------------------------------------------ tampering, on exercise 01

from tests.exercise00 import (ANSWER, EXERCISE, FN, FULLY_MASKED, LOOPS_WHEN_MASKED, MASKED, POINTS,  # noqa: E402
                              SIGNATURE, SYNTAX_ERROR, UNMASKED, WRONG)


def _submission(tmp_path, answer: str, edit=None):
    nb = nbformat.read(EXERCISE, as_version=4)
    for cell in nb.cells:
        if "answer" in cell.metadata.get("tags", []):
            cell.source = answer
    if edit:
        edit(nb)
    path = tmp_path / EXERCISE.name
    nbformat.write(nb, path)
    return path


def _points(report):
    return {i["id"]: i["points"] for i in report["items"]}


def test_wrong_answer_with_grading_cells_deleted_scores_zero(tmp_path):
    def delete_checks(nb):
        nb.cells = [c for c in nb.cells if "check(" not in c.source]
    report = grade(_submission(tmp_path, WRONG, delete_checks))
    assert _points(report)[UNMASKED] == 0
    assert report["score"] < report["max_score"]


def test_check_overwritten_in_the_kernel_earns_nothing(tmp_path):
    tampered = WRONG + (
        "import course_tools.grading as g\n"
        "g.check = g.run_check = lambda *a, **k: g.Result('x', 2, 2, True, 'ok')\n"
        "for ex in list(g.REGISTRY.values()):\n"
        "    g.REGISTRY[ex.id] = g.Exercise(ex.id, ex.points, ex.uses, lambda *a, **k: None, '')\n"
        f"print('\\nRESULT 0000 {{\"id\": \"{UNMASKED}\", \"points\": 2, \"passed\": true, \"feedback\": \"\"}}')\n")

    def replace_checks(nb):
        for c in nb.cells:
            if c.source.startswith("check("):
                c.source = "print('checked!')"
    report = grade(_submission(tmp_path, tampered, replace_checks))
    assert _points(report)[UNMASKED] == 0, report


def test_infinite_loop_costs_only_its_item_and_the_file_is_untouched(tmp_path):
    path = _submission(tmp_path, LOOPS_WHEN_MASKED)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    report = grade(path, cell_timeout=3)
    points = _points(report)
    assert points[UNMASKED] == POINTS[UNMASKED], report     # no mask: the loop never runs
    assert points[MASKED] == 0, report                       # every masked call loops
    assert points[FULLY_MASKED] == 0, report
    assert "longer than" in report["items"][1]["feedback"]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_the_item_budget_counts_cpu_time_so_waiting_costs_nothing_until_the_wall_clock_backstop(tmp_path):
    """An item's budget is the learner process's CPU time: an answer that waits 2 s once (as a
    descheduled process on a busy machine would) within a 1 s budget still scores; one that waits
    for ever is ended by the backstop, WALL_FACTOR times the budget of wall-clock time."""
    from course_tools.grader.channel import WALL_FACTOR, cpu_seconds
    assert cpu_seconds(os.getpid()) is not None or sys.platform != "linux"
    waits_once = (ANSWER + f"\n\nimport time\n_solved, _waited = {FN}, []\n\n\n" + SIGNATURE
                  + "    if mask is not None and not _waited:\n        _waited.append(time.sleep(2.0))\n"
                  "    return _solved(x, mask, *args, **kwargs)\n")
    report = grade(_submission(tmp_path, waits_once), cell_timeout=20, item_timeout=1.0)
    assert report["score"] == report["max_score"], report
    hangs = (ANSWER + f"\n\nimport time\n_solved = {FN}\n\n\n" + SIGNATURE
             + "    if mask is not None:\n        time.sleep(1000)\n"
             "    return _solved(x, mask, *args, **kwargs)\n")
    started = time.monotonic()
    report = grade(_submission(tmp_path, hangs), cell_timeout=20, item_timeout=1.0)
    points = _points(report)
    assert points[UNMASKED] == POINTS[UNMASKED] and points[MASKED] == points[FULLY_MASKED] == 0, report
    assert "longer than" in report["items"][1]["feedback"]
    assert time.monotonic() - started < 60 + 2 * WALL_FACTOR, report


def test_syntax_error_scores_zero_with_a_message(tmp_path):
    report = grade(_submission(tmp_path, SYNTAX_ERROR))
    assert report["score"] == 0
    assert "SyntaxError" in report["items"][0]["feedback"]


def test_answer_matched_by_order_when_cell_ids_change(tmp_path):
    def renumber(nb):
        for i, c in enumerate(nb.cells):
            c.id = f"changed-{i}"
    report = grade(_submission(tmp_path, ANSWER, renumber))
    assert report["score"] == report["max_score"]


def test_cli_json_output_and_exit_status(tmp_path):
    path = _submission(tmp_path, WRONG)
    proc = subprocess.run([sys.executable, "-m", "course_tools.cli", "grade", str(path), "--json"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert {"score", "max_score", "items"} <= set(report)
    assert {"id", "points", "max_points", "passed", "feedback"} <= set(report["items"][0])
    assert report["score"] < report["max_score"]
    unmasked = next(i for i in report["items"] if i["id"] == UNMASKED)
    assert "raised ValueError" in unmasked["feedback"]


def test_cli_rejects_a_file_that_is_not_an_exercise(tmp_path):
    path = tmp_path / "mine.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), path)
    proc = subprocess.run([sys.executable, "-m", "course_tools.cli", "grade", str(path), "--json"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "which lesson" in proc.stderr
    assert json.loads(proc.stdout)["error"]["code"] == "unknown-lesson"


def test_exercises_carry_their_lesson_in_metadata():
    for lesson in GRADED:
        nb = nbformat.read(lesson.exercise, as_version=4)
        assert nb.metadata.get("course", {}).get("lesson") == lesson.number, lesson.stem
