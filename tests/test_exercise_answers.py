"""What the exercises grade: the lesson's answer, not a copy of the lesson.

- A lesson's own definitions (its `def`s and `class`es, with its imports) pasted into its exercise
  pass no auto-graded item: the items ask for the idea applied where the lesson did not go.
"""
from __future__ import annotations

import ast

import nbformat
import pytest


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
