"""What the exercises grade: the lesson's answer, not a copy of the lesson.

- A lesson's own definitions (its `def`s and `class`es, with its imports) pasted into its exercise
  pass no auto-graded item: the items ask for the idea applied where the lesson did not go.
- Every lesson 01-25 ends with one written answer (`NN.written`), graded by a person with a rubric.
- Every exercise's header names the README's way to the learner's copy.
"""
from __future__ import annotations

import ast
import re

import nbformat
import pytest

from course_tools.grader.authoring import WRITTEN_NAME
from course_tools.workspace import work_copy

from .test_corpus import LESSON, REGISTRY, _cells, run_check

pytestmark = pytest.mark.grader
QUESTION_LESSONS = [n for n in sorted(LESSON) if n >= 1]


def _constant(node) -> bool:
    """`SEED = 0`, `D_MODEL, HEADS = 64, 4`: a lesson's settings, which its definitions' defaults read."""
    return isinstance(node, ast.Assign) and all(
        isinstance(t, ast.Name) and t.id.isupper() for target in node.targets
        for t in (target.elts if isinstance(target, ast.Tuple) else [target]))


def _lesson_definitions(number: int) -> list[str]:
    """The lesson notebook's imports, settings, functions and classes (no experiment is run)."""
    keep = []
    for cell in nbformat.read(LESSON[number].notebook, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:       # IPython magics: not definitions
            continue
        keep += [ast.get_source_segment(cell.source, node) for node in tree.body
                 if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)) or _constant(node)]
    return keep


@pytest.mark.parametrize("number", QUESTION_LESSONS, ids=[f"lesson{n:02d}" for n in QUESTION_LESSONS])
def test_the_lessons_own_definitions_pass_no_item(number):
    setup, _, graded = _cells(number)
    pasted = _lesson_definitions(number)
    namespace = {"__name__": "__main__"}
    for source in setup:
        exec(compile(source, "<setup>", "exec"), namespace)   # noqa: S102 - the course's own cells
    for statement in pasted:
        try:
            exec(compile(statement, "<lesson>", "exec"), namespace)   # noqa: S102
        except Exception:  # noqa: BLE001 - a setting computed from the lesson's data: not a definition
            pass
    pasted = "\n\n".join(pasted)
    passed = []
    for item in graded:
        if REGISTRY[item].manual:
            continue
        objects = [namespace.get(name) for name in REGISTRY[item].uses]
        result = run_check(item, *objects, seed=0, learner_sources=[pasted], official_sources=setup)
        if result.passed:
            passed.append(item)
    assert not passed, f"the lesson's own definitions pass {passed}: grade the idea applied elsewhere"


@pytest.mark.parametrize("number", QUESTION_LESSONS, ids=[f"lesson{n:02d}" for n in QUESTION_LESSONS])
def test_every_lesson_ends_with_one_written_answer_graded_by_hand(number):
    _, answers, graded = _cells(number)
    written = [i for i in graded if REGISTRY[i].manual]
    assert written == [f"{number:02d}.written"], graded
    assert graded[-1] == written[0], "the written answer comes last"
    assert len(REGISTRY[written[0]].rubric) >= 3
    assert REGISTRY[written[0]].uses == (WRITTEN_NAME,)
    exercise = nbformat.read(LESSON[number].exercise, as_version=4)
    cell = next(c for c in exercise.cells if re.match(rf"\s*{WRITTEN_NAME}\s*=", c.source))
    assert "answer" in cell.metadata.get("tags", [])
    namespace = {}
    exec(cell.source, namespace)   # noqa: S102 - the exercise leaves the string empty
    assert not namespace[WRITTEN_NAME].strip()
    solution = next(s for s in answers if re.match(rf"\s*{WRITTEN_NAME}\s*=", s))
    exec(solution.replace("### BEGIN WRITTEN\n", "").replace("### END WRITTEN\n", ""), namespace)  # noqa: S102
    assert 25 <= len(namespace[WRITTEN_NAME].split()) <= 200, "a model answer of 3-5 sentences"


@pytest.mark.parametrize("number", sorted(LESSON), ids=[f"lesson{n:02d}" for n in sorted(LESSON)])
def test_the_header_names_the_readmes_way_to_the_learners_copy(number):
    lesson = LESSON[number]
    header = nbformat.read(lesson.solution, as_version=4).cells[0].source
    copy = work_copy(lesson).name
    expected = (f"`course start {number:02d}` copies this notebook to `work/{copy}`")
    assert expected in " ".join(header.split()), header
    assert f"course grade {number:02d}" in header and f"course check {number:02d}" in header
