"""Generate `exercises/` from `solutions/` by stripping marked solution regions.

The markers are nbgrader's, which instructors already know:

    ### BEGIN SOLUTION            ### BEGIN HIDDEN TESTS
    ...                          ...
    ### END SOLUTION              ### END HIDDEN TESTS

A solution region becomes `# YOUR CODE HERE` + `raise NotImplementedError()` at the same
indentation; hidden tests vanish; outputs are cleared; cells that held a solution are
tagged `answer` (the grader takes only those from a learner). A small stripper instead of
nbgrader itself: nbgrader is a heavy dependency for four regular expressions.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

from . import ROOT

SOLUTION = re.compile(r"^([ \t]*)### BEGIN SOLUTION[^\n]*\n.*?^[ \t]*### END SOLUTION[^\n]*(\n|$)",
                      re.M | re.S)
HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS[^\n]*\n.*?^[ \t]*### END HIDDEN TESTS[^\n]*(\n|$)",
                    re.M | re.S)
PLACEHOLDER = "{indent}# YOUR CODE HERE\n{indent}raise NotImplementedError()\n"


def strip_source(source: str) -> tuple[str, bool]:
    """(exercise source, whether a solution region was found)."""
    stripped, found = SOLUTION.subn(lambda m: PLACEHOLDER.format(indent=m.group(1)), source)
    stripped = HIDDEN.sub("", stripped)
    if "### BEGIN SOLUTION" in stripped or "### END SOLUTION" in stripped:
        raise ValueError("source: an unmatched '### BEGIN/END SOLUTION' marker")
    return stripped.rstrip("\n"), found > 0


def make_exercise(solution_nb, lesson: int | None = None):
    exercise_nb = nbformat.from_dict(solution_nb)
    if lesson is not None:  # the grader identifies a submission by this, not by its file name
        exercise_nb.metadata["course"] = {"lesson": lesson}
    for cell in exercise_nb.cells:
        if cell.cell_type == "code":
            source, had_solution = strip_source(cell.source)
            cell.source = source
            cell.outputs = []
            cell.execution_count = None
            tags = [t for t in cell.metadata.get("tags", []) if t != "answer"]
            if had_solution:
                tags.append("answer")
            if tags:
                cell.metadata["tags"] = tags
            else:
                cell.metadata.pop("tags", None)
        cell.metadata.pop("execution", None)
    exercise_nb.metadata.pop("papermill", None)
    return exercise_nb


def render(solution_path: Path) -> str:
    nb = nbformat.read(solution_path, as_version=4)
    match = re.match(r"^(\d\d)_", Path(solution_path).name)
    return nbformat.writes(make_exercise(nb, int(match.group(1)) if match else None)) + "\n"


def generate(solutions_dir: Path = ROOT / "solutions", exercises_dir: Path = ROOT / "exercises",
             check_only: bool = False) -> list[str]:
    """Write (or, with check_only, compare) every exercise; return the stale file names."""
    stale = []
    exercises_dir.mkdir(exist_ok=True)
    for solution in sorted(solutions_dir.glob("*.ipynb")):
        target = exercises_dir / solution.name
        text = render(solution)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            stale.append(solution.name)
            if not check_only:
                target.write_text(text, encoding="utf-8")
    for orphan in sorted(set(p.name for p in exercises_dir.glob("*.ipynb"))
                         - set(p.name for p in solutions_dir.glob("*.ipynb"))):
        stale.append(orphan)
        if not check_only:
            (exercises_dir / orphan).unlink()
    return stale
