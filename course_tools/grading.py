"""The notebook's `check(...)`: the learner-facing end of grading, in the learner's own kernel.

`from course_tools.grading import check` is the one import the exercise notebooks make.

One verdict: `check(...)` (and so `course check`, which runs those cells) applies the same shortcut
rules as `course grade` (`shortcuts.shortcut_feedback`) to the cells the kernel ran, minus the
official set-up cells, before running the same check (registered with course_tools/grader/authoring.py).
In a notebook a failing check shows one short message (no traceback into this module:
`CheckFailed._render_traceback_`) and a passing one prints one line and returns nothing.
In the grader's sandbox this module is replaced by a stub (learner/server.py): there the grading
cells do nothing, and the grader runs the checks itself.
"""
from __future__ import annotations

import json
import secrets
import sys
import traceback
from dataclasses import dataclass

import torch

from .grader.authoring import Exercise, load_all, passed_feedback
from .grader.errors import CheckFailed
from .grader.notebook import ANSWER_TAG, GRADE_CALL   # answer and grading cells, read as the grader reads them
from .manifest import LESSONS
from .shortcuts import latest_definitions, shortcut_feedback, transform


# ---------------------------------------------------------------- running checks

@dataclass
class Result:
    id: str
    points: int
    max_points: int
    passed: bool
    feedback: str


def run_check(exercise_id: str, *objects, seed: int | None = None,
              registry: dict[str, Exercise] | None = None, learner_sources: list[str] | None = None,
              official_sources: list[str] = ()) -> Result:
    """Run one registered check on the learner's objects; never raises. With `learner_sources`
    (the code the learner ran), the grader's shortcut rules apply first."""
    registry = registry if registry is not None else load_all()
    ex = registry.get(exercise_id)
    if ex is None:
        return Result(exercise_id, 0, 0, False, f"unknown exercise id {exercise_id!r}")
    if learner_sources is not None:
        try:
            refused = shortcut_feedback(ex.id, learner_sources, list(official_sources), ex.uses, ex.forbids)
        except (RecursionError, MemoryError) as error:   # as the grader says it
            refused = f"not graded: your code could not be checked ({type(error).__name__}: nested too deeply?)"
        if refused:
            return Result(ex.id, 0, ex.points, False, refused)
    seed = secrets.randbelow(2**31) if seed is None else seed
    try:
        note = ex.run(*objects, rng=torch.Generator().manual_seed(seed))
    except CheckFailed as failure:
        return Result(ex.id, 0, ex.points, False, str(failure))
    except NotImplementedError:
        return Result(ex.id, 0, ex.points, False, "not implemented yet (the cell still raises "
                      "NotImplementedError)")
    except Exception as error:  # the learner's code raised: show where, briefly
        tb = traceback.extract_tb(error.__traceback__)
        frame = tb[-1] if tb else None
        at = f" (line {frame.lineno}: {frame.line})" if frame and frame.line else ""
        return Result(ex.id, 0, ex.points, False, f"your code raised {type(error).__name__}: "
                      f"{error}{at}")
    if ex.manual:   # a person grades it: no points from the machine
        return Result(ex.id, 0, ex.points, True, passed_feedback(note))
    return Result(ex.id, ex.points, ex.points, True, passed_feedback(note))


# ---------------------------------------------------------------- what the kernel ran

_CELLS: list[str] = []   # the sources of the cells this IPython kernel ran since the import


def _record_cell(info) -> None:
    _CELLS.append(getattr(info, "raw_cell", "") or "")


def _install_recorder() -> None:
    """Note every cell the kernel runs (nbval runs cells without history, so `In` would not do)."""
    if "IPython" not in sys.modules:
        return
    try:
        ip = sys.modules["IPython"].get_ipython()
        if ip is None or getattr(ip, "_course_cells", None) is _CELLS:
            return
        ip.events.register("pre_run_cell", _record_cell)
        ip._course_cells = _CELLS
    except Exception:  # noqa: BLE001 - no recorder: check() then runs without the shortcut rules
        return


_install_recorder()


def _official_setup(exercise_id: str) -> list[str] | None:
    """The official exercise's set-up cells (neither answers nor check cells), as the grader sees them."""
    prefix = exercise_id.split(".")[0]
    lesson = next((l for l in LESSONS if prefix.isdigit() and l.number == int(prefix) and l.has_exercise), None)
    if lesson is None or not lesson.exercise.exists():
        return None
    nb = json.loads(lesson.exercise.read_text(encoding="utf-8"))
    out = []
    for cell in nb["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "code" and ANSWER_TAG not in cell.get("metadata", {}).get("tags", []) \
                and not GRADE_CALL.search(source):
            out.append(source)
    return out


def _kernel_sources(exercise_id: str) -> tuple[list[str] | None, list[str]]:
    """(the learner's code the kernel ran, still in force; the official set-up cells), or
    (None, []) outside IPython."""
    if not _CELLS:
        return None, []
    official = _official_setup(exercise_id) or []
    official_set = {transform(s).strip() for s in official}
    learner = [s for s in _CELLS if s.strip() and transform(s).strip() not in official_set
               and not GRADE_CALL.search(s)]
    return latest_definitions(learner), official


def check(exercise_id: str, *objects, seed: int | None = None) -> None:
    """Learner-facing: run the check with the grader's rules; print one line when it passes,
    raise CheckFailed with one short message when it fails."""
    learner_sources, official_sources = _kernel_sources(exercise_id)
    result = run_check(exercise_id, *objects, seed=seed, learner_sources=learner_sources,
                       official_sources=official_sources)
    if not result.passed:
        raise CheckFailed(f"{exercise_id} ({result.points}/{result.max_points}): {result.feedback}") from None
    ex = load_all().get(exercise_id)
    if ex is not None and ex.manual:
        rubric = "\n".join(f"  - {point}" for point in ex.rubric)
        print(f"RECORDED {exercise_id} ({ex.points} points, graded by the instructor): {result.feedback}\n"
              f"Compare your answer with what the instructor will look for:\n{rubric}")
        return
    print(f"PASSED {exercise_id} ({result.points}/{result.max_points}): {result.feedback}")
