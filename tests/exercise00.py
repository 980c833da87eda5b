"""The grader tests' fixture: exercise 00 (a masked softmax, three items of one point), the
solution's answer, and answers built from it (a wrong one, one that loops whenever a mask is given,
one that handles no mask only). Derived from the solution notebook, so the grader tests follow the
warm-up when it changes; the lessons' own exercises are free to change shape."""
from __future__ import annotations

import ast

import nbformat

from course_tools import ROOT
from course_tools.grader.authoring import load_all
from course_tools.grader.notebook import GRADE_CALL

EXERCISE = ROOT / "exercises" / "00_welcome.ipynb"
SOLUTION = ROOT / "solutions" / "00_welcome.ipynb"
LESSON = "00"


def _answers(stem: str) -> list[str]:
    exercise = nbformat.read(ROOT / "exercises" / stem, as_version=4)
    solution = {c.id: c.source for c in nbformat.read(ROOT / "solutions" / stem, as_version=4).cells}
    return [solution[c.id] for c in exercise.cells if "answer" in c.metadata.get("tags", [])]


ANSWER = _answers(EXERCISE.name)[0]     # the function's cell
FN = next(n.name for n in ast.parse(ANSWER).body if isinstance(n, ast.FunctionDef))
ITEMS = [i for c in nbformat.read(EXERCISE, as_version=4).cells for i in GRADE_CALL.findall(c.source)
         if not load_all()[i].manual]
POINTS = {i: load_all()[i].points for i in ITEMS}
MAX = sum(POINTS.values())
UNMASKED, MASKED, FULLY_MASKED = ITEMS      # the three items, in the notebook's order
SIGNATURE = f"def {FN}(x, mask=None, *args, **kwargs):\n"

WRONG = SIGNATURE + "    raise ValueError('not this')\n"
# the solution, except that every call with a mask loops forever: the unmasked item still scores
LOOPS_WHEN_MASKED = (ANSWER + f"\n\n_solved = {FN}\n\n\n" + SIGNATURE
                     + "    while mask is not None:\n        pass\n"
                     "    return _solved(x, mask, *args, **kwargs)\n")
# the solution for calls without a mask only
UNMASKED_ONLY = (ANSWER + f"\n\n_solved = {FN}\n\n\n" + SIGNATURE
                 + "    if mask is not None:\n        raise ValueError('todo')\n"
                 "    return _solved(x, mask, *args, **kwargs)\n")
SYNTAX_ERROR = f"def {FN}(x, mask=None)\n    return x\n"
