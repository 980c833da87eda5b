"""One verdict (issue 18): the notebook's `check(...)` cells, `course check` and `course grade` pass
and fail the same items, shortcut rules included.

The warm-up exercise (00, a masked softmax) in four versions - the official solution, the untouched
exercise, an answer that calls `F.softmax` (a shortcut the grader refuses) and one that returns NaN on
fully masked rows - is run
three ways: top to bottom in IPython as JupyterLab's kernel runs them (reading what each check
cell shows), under `course check` (nbval) and under `course grade` (the sandboxed grader). Each item
must get the same pass/fail from all three. A fifth copy with a syntax error shows that
`course check` names the cell as it sits on screen and the line.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

import nbformat
import pytest

from course_tools import ROOT, selfcheck
from course_tools.grader import grade

from tests.exercise00 import EXERCISE, SOLUTION

SYNTAX_ERROR = "def f(x, mask=None):\n    y = 1\n    return (x y)\n"


def _solution_answer() -> str:
    nb = nbformat.read(SOLUTION, as_version=4)
    source = next(c.source for c in nb.cells if "### BEGIN SOLUTION" in c.source)
    return "\n".join(l for l in source.splitlines() if "SOLUTION" not in l)


def _shortcut() -> str:
    """The official answer plus a call of the PyTorch built-in that does the whole job."""
    lines = _solution_answer().splitlines()
    at = 2 if lines[1].strip().startswith(('"""', "'''")) else 1      # after the def (and docstring)
    lines.insert(at, "    _ = F.softmax(x, dim=-1)  # the built-in does it all")
    return "import torch.nn.functional as F\n" + "\n".join(lines)


def _nan_rows() -> str:
    """The official answer without the guard for fully masked rows (0 / 0 there)."""
    answer = _solution_answer()
    assert "total.clamp_min(torch.finfo(x.dtype).tiny)" in answer
    return answer.replace("total.clamp_min(torch.finfo(x.dtype).tiny)", "total")


def _with_answer(tmp_path, name, answer):
    nb = nbformat.read(EXERCISE, as_version=4)
    for cell in nb.cells:
        if "answer" in cell.metadata.get("tags", []):
            cell.source = answer
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


NOTEBOOK_RUN = r"""
import io, json, re, sys
from contextlib import redirect_stdout
import nbformat
from IPython.core.interactiveshell import InteractiveShell
from course_tools.selfcheck import GRADE_CALL
shell = InteractiveShell.instance()
out = {}
for path in sys.argv[1:]:
    shell.reset(new_session=False)
    if "course_tools.grading" in sys.modules:
        sys.modules["course_tools.grading"]._CELLS.clear()     # what a fresh kernel has run: nothing
    verdicts = out[path] = {}
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        printed = io.StringIO()
        with redirect_stdout(printed):
            result = shell.run_cell(cell.source, store_history=True)
        error = result.error_in_exec
        shown = error._render_traceback_() if hasattr(error, "_render_traceback_") else None
        for exercise_id in GRADE_CALL.findall(cell.source):
            verdicts[exercise_id] = {"passed": error is None, "printed": printed.getvalue(), "shown": shown,
                                     "error": type(error).__name__ if error else None,
                                     "result": None if result.result is None else repr(result.result)}
print("VERDICTS " + json.dumps(out))
"""


def _in_the_notebook(paths) -> dict[str, dict[str, bool]]:
    """Each notebook's cells run top to bottom in IPython, as JupyterLab's kernel runs them (one
    subprocess, a fresh namespace per notebook), and what each check cell showed."""
    proc = subprocess.run([sys.executable, "-c", NOTEBOOK_RUN, *map(str, paths)], capture_output=True,
                          text=True, cwd=ROOT, timeout=600)
    line = next((l for l in proc.stdout.splitlines() if l.startswith("VERDICTS ")), None)
    assert line, proc.stdout[-2000:] + proc.stderr[-2000:]
    verdicts = {}
    for path, cells in json.loads(line[len("VERDICTS "):]).items():
        verdicts[path] = {}
        for exercise_id, seen in cells.items():
            if seen["passed"]:   # one line, and no Result(...) echoed
                assert seen["printed"].count("\n") == 1 and seen["printed"].startswith(f"PASSED {exercise_id}"), seen
                assert seen["result"] is None, seen
            else:                # one short message instead of a traceback, and nothing else
                assert seen["error"] == "CheckFailed" and len(seen["shown"]) == 1, seen
                assert seen["printed"].strip() == seen["shown"][0].strip(), seen   # the shell shows it once
            verdicts[path][exercise_id] = seen["passed"]
    return verdicts


@pytest.fixture(scope="module")
def versions(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("verdicts")
    paths = {"solution": SOLUTION, "untouched": EXERCISE,
             "shortcut": _with_answer(tmp, "shortcut.ipynb", _shortcut()),
             "nan-rows": _with_answer(tmp, "nan rows.ipynb", _nan_rows())}
    syntax = _with_answer(tmp, "syntax.ipynb", SYNTAX_ERROR)
    checked = selfcheck.run(list(paths.values()) + [syntax])
    in_notebook = _in_the_notebook(paths.values())
    with ProcessPoolExecutor(2) as pool:
        graded = dict(zip(paths, pool.map(grade, map(str, paths.values()))))
    return paths, checked, graded, syntax, in_notebook


def _course_check(result) -> dict[str, bool]:
    return {i: cell.outcome == "passed" for cell in result.cells for i in cell.checks}


@pytest.mark.parametrize("version", ["solution", "untouched", "shortcut", "nan-rows"])
def test_notebook_check_course_check_and_course_grade_agree(versions, version):
    paths, checked, graded, _, in_notebook = versions
    path = paths[version]
    by_grade = {item["id"]: item["passed"] for item in graded[version]["items"]}
    by_course_check = _course_check(checked[path.resolve()])
    by_notebook = in_notebook[str(path)]
    assert by_notebook == by_course_check == by_grade, (version, by_notebook, by_course_check, graded[version])
    if version == "solution":
        assert all(by_grade.values())
    elif version in ("untouched", "shortcut"):
        assert not any(by_grade.values())
    else:
        assert not all(by_grade.values())
    text = selfcheck.format_result(checked[path.resolve()])
    if version == "shortcut":   # the same reason, word for word, from the check cells and the grader
        feedback = {i["feedback"] for i in graded[version]["items"]}
        assert len(feedback) == 1, feedback
        reason = feedback.pop()
        assert "not graded: your code uses torch.nn.functional.softmax" in reason
        assert text.count(reason) == len(by_grade), text
    if version == "nan-rows":   # the diagnosis is what the learner reads
        assert "0 / 0" in text, text


def test_course_check_names_the_cell_on_screen_and_the_line(versions):
    _, checked, _, syntax, _ = versions
    text = selfcheck.format_result(checked[syntax.resolve()])
    answer_position = 1 + next(i for i, c in enumerate(nbformat.read(syntax, as_version=4).cells)
                               if "answer" in c.metadata.get("tags", []))
    assert re.search(rf"FAIL  \(cell {answer_position}, line 3, not a check\)  - SyntaxError", text), text
