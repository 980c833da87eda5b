"""Step 1 of grading: the learner's notebook, read as untrusted bytes and rebuilt into the cells to run.

- `read_notebook`: size-capped, regular file only (no symlink, directory, `.`/`..`), strict UTF-8
  JSON; `validate`: nbformat 4, every cell field checked. Anything else is a `GradeError`.
- `lesson_of`: the lesson comes from the notebook's metadata (`metadata.course.lesson`, written by
  `course exercises`), so a renamed download still grades; `check_lesson_matches` refuses cells
  of another lesson.
- `rebuild`: the official exercise supplies every non-answer cell; the learner contributes the
  answer cells (matched by id, then by order) and cells they added (run where they added them).

`ANSWER_TAG` and `GRADE_CALL` are defined here, once: the notebook's `check` (grading.py), the
exercise generator and `course check` (selfcheck.py) read a notebook as the grader does.
Standard library only at the top: importing it is cheap (no torch), as the self-check's pytest
plugin needs.
"""
from __future__ import annotations

import ast
import json
import os
import re
import stat

from ..manifest import LESSONS
from ..shortcuts import _PARSE_ERRORS, _parse, transform   # (as the static check parses a cell)
from .errors import GradeError

#: The tag of an answer cell (`course exercises` keeps it on the cells it strips).
ANSWER_TAG = "answer"
#: A grading call in a cell, `check("NN.item", ...)`; group 1 is the exercise id.
GRADE_CALL = re.compile(r"""^\s*check\(\s*["']([^"']+)["']""", re.M)

MAX_NOTEBOOK_BYTES = 8 * 1024**2
MAX_CELLS = 500
MAX_FEEDBACK = 500


def clean(text, limit: int = MAX_FEEDBACK) -> str:
    """`text` as the learner may see it: printable characters only, at most `limit` of them."""
    text = "".join(ch if ch.isprintable() or ch == "\n" else "?" for ch in str(text))
    return text if len(text) <= limit else text[:limit - 1] + "…"


# ------------------------------------------------------------------ reading untrusted notebooks

def shown_name(path) -> str:
    """A file's name, safe to show in a message (ASCII, at most 120 characters)."""
    return ascii(os.path.basename(_path_text(path)))[1:-1][:120] or "(empty)"


def _path_text(path) -> str:
    """A path as str, whatever its bytes (a non-UTF-8 name keeps its bytes as surrogates)."""
    if path is None:
        return ""
    return os.fsdecode(path) if isinstance(path, (bytes, os.PathLike)) else str(path)


def printable(text) -> str:
    """`text` (a file name, say) safe to print or write as UTF-8: undecodable bytes become U+FFFD."""
    return _path_text(text).encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def read_notebook(path) -> dict:
    """The notebook at `path` as validated JSON; GradeError for anything else."""
    raw = _path_text(path)
    if raw.strip() in ("", ".", "..") or os.path.basename(raw.rstrip("/")) in (".", ".."):
        raise GradeError("bad-path", "path: give the path of a notebook file")
    try:
        info = os.lstat(raw)
    except (OSError, ValueError):
        raise GradeError("not-found", f"path: no such file {shown_name(raw)!r}") from None
    if stat.S_ISLNK(info.st_mode):
        raise GradeError("not-a-file", f"path: {shown_name(raw)!r} is a symbolic link; give the file itself")
    if not stat.S_ISREG(info.st_mode):
        raise GradeError("not-a-file", f"path: {shown_name(raw)!r} is not a regular file")
    if info.st_size > MAX_NOTEBOOK_BYTES:
        raise GradeError("too-large", f"{shown_name(raw)!r} is {info.st_size} bytes; the limit is "
                         f"{MAX_NOTEBOOK_BYTES} (clear the outputs and try again)")
    try:
        fd = os.open(raw, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_NOTEBOOK_BYTES + 1)
    except OSError:
        raise GradeError("unreadable", f"{shown_name(raw)!r} could not be read") from None
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise GradeError("too-large", f"{shown_name(raw)!r} is larger than {MAX_NOTEBOOK_BYTES} bytes")
    try:
        nb = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise GradeError("not-a-notebook", f"{shown_name(raw)!r} is not a notebook (not valid UTF-8 JSON)") from None
    return validate(nb, shown_name(raw))


def validate(nb, name: str = "notebook") -> dict:
    def bad(why):
        return GradeError("not-a-notebook", f"{name!r} is not a valid notebook: {why}")
    if not isinstance(nb, dict):
        raise bad("the top level is not an object")
    if nb.get("nbformat") != 4 or type(nb.get("nbformat")) is not int:
        raise bad("nbformat must be 4")
    cells = nb.get("cells")
    if not isinstance(cells, list) or len(cells) > MAX_CELLS:
        raise bad(f"'cells' must be a list of at most {MAX_CELLS} cells")
    metadata = nb.get("metadata", {})
    if not isinstance(metadata, dict):
        raise bad("'metadata' must be an object")
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict):
            raise bad(f"cell {i} is not an object")
        if cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise bad(f"cell {i} has an unknown cell_type")
        source = cell.get("source", "")
        if isinstance(source, list):
            if not all(isinstance(s, str) for s in source):
                raise bad(f"cell {i}: 'source' must be a string or a list of strings")
        elif not isinstance(source, str):
            raise bad(f"cell {i}: 'source' must be a string or a list of strings")
        meta = cell.get("metadata", {})
        if not isinstance(meta, dict):
            raise bad(f"cell {i}: 'metadata' must be an object")
        tags = meta.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise bad(f"cell {i}: 'metadata.tags' must be a list of strings")
        if "id" in cell and not isinstance(cell["id"], str):
            raise bad(f"cell {i}: 'id' must be a string")
    return nb


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _code(nb) -> list[dict]:
    return [c for c in nb["cells"] if c.get("cell_type") == "code"]




def lesson_of(nb, path=None):
    """The manifest lesson of an exercise notebook, from its metadata (`course.lesson`, written by
    `course exercises` and carried by the solutions): that is what marks a notebook as an exercise.
    A lesson notebook (or any other) is refused, whatever its file name; a renamed copy is not."""
    graded = {l.number: l for l in LESSONS if l.has_exercise and l.exercise and l.exercise.exists()}
    course = nb.get("metadata", {}).get("course")
    number = course.get("lesson") if isinstance(course, dict) else None
    if isinstance(number, str) and number.strip().isdigit() and len(number.strip()) <= 3:
        number = int(number.strip())          # "01", as a hand-edited notebook may say
    if number is not None and (type(number) is not int or number not in graded):
        known = ", ".join(f"{n:02d}" for n in sorted(graded))
        raise GradeError("unknown-lesson", f"the notebook's metadata 'course.lesson' is "
                         f"{clean(repr(number), 40)}, not the number of a lesson with an exercise "
                         f"({known})")
    if type(number) is not int or number not in graded:
        name = os.path.basename(_path_text(path))
        lesson = next((l for l in LESSONS if name == l.notebook.name), None)
        if number is None and lesson is not None:
            raise GradeError("not-an-exercise", f"{shown_name(name)!r} is lesson {lesson.number:02d}'s notebook, "
                             "not an exercise: nothing was graded or recorded. Grade its exercise: "
                             f"course start {lesson.number:02d}, answer in work/{lesson.stem}_exercise.ipynb, "
                             f"then course grade {lesson.number:02d}")
        known = ", ".join(f"{n:02d}" for n in sorted(graded))
        raise GradeError("unknown-lesson", "the notebook does not say which lesson it belongs to "
                         f"(metadata 'course.lesson' is missing or not one of {known}): is it a "
                         "course exercise (exercises/, or your copy from `course start NN`)?")
    return graded[number]



def rebuild(official, learner) -> list[dict]:
    """The cells to run, in order: official cells, the learner's answers in the answer cells'
    places, and cells the learner added after the official cell they follow. Grading cells
    become {"kind": "grade", "id": ...} steps (run here, not in the learner's process)."""
    official_cells = _code(official)
    learner_cells = _code(learner)
    official_ids = {c.get("id"): i for i, c in enumerate(official_cells) if c.get("id")}
    official_sources = {_source(c).strip() for c in official_cells}
    learner_answers = [c for c in learner_cells if ANSWER_TAG in _tags(c)]
    by_id = {c.get("id"): c for c in learner_cells if c.get("id")}

    answers, used, answer_index = {}, set(), 0
    for i, cell in enumerate(official_cells):
        if ANSWER_TAG in _tags(cell):
            mine = by_id.get(cell.get("id")) if cell.get("id") else None
            if mine is None:
                rest = [c for c in learner_answers if id(c) not in used]
                mine = rest[0] if rest and answer_index < len(learner_answers) else None
            answer_index += 1
            if mine is not None:
                used.add(id(mine))
            answers[i] = _source(mine) if mine is not None else ""

    added: dict[int, list[str]] = {}
    anchor = -1
    for cell in learner_cells:
        if cell.get("id") in official_ids:
            anchor = official_ids[cell.get("id")]
            official_cell = official_cells[anchor]
            if anchor not in answers and not GRADE_CALL.search(_source(official_cell)):
                extra = _additions(_source(official_cell), _source(cell))
                if extra:   # e.g. `import numpy as np` added to the set-up cell: kept, after it
                    added.setdefault(anchor, []).append(extra)
            continue
        if id(cell) in used:
            anchor = next((i for i, s in answers.items() if s == _source(cell)), anchor)
            continue
        source = _source(cell)
        if not source.strip() or source.strip() in official_sources or GRADE_CALL.search(source):
            continue
        added.setdefault(anchor, []).append(source)

    plan = [{"kind": "added", "source": s} for s in added.get(-1, [])]
    for i, cell in enumerate(official_cells):
        source = _source(cell)
        if i in answers:
            plan.append({"kind": "answer", "source": answers[i]})
        elif GRADE_CALL.findall(source):
            plan.extend({"kind": "grade", "id": exercise_id} for exercise_id in GRADE_CALL.findall(source))
        else:
            plan.append({"kind": "setup", "source": source})
        plan.extend({"kind": "added", "source": s} for s in added.get(i, []))
    return plan


def _additions(official: str, mine: str) -> str:
    """The statements of the learner's version of a provided cell that the official cell does not
    have (`import numpy as np`, a helper), as source; grading calls dropped. "" when none."""
    if official.strip() == mine.strip():
        return ""
    theirs = {ast.dump(s) for s in _parse(official)}
    try:
        text = transform(mine)
        body = ast.parse(text).body
    except _PARSE_ERRORS:   # it did not run in the notebook either
        return ""
    keep = []
    for stmt in body:
        segment = ast.get_source_segment(text, stmt) or ""
        if ast.dump(stmt) not in theirs and segment and not GRADE_CALL.search(segment):
            keep.append(segment)
    return "\n".join(keep)


_TOP_LEVEL_NAME = re.compile(r"^(?:async\s+def|def|class)\s+(\w+)|^(\w+)\s*(?::[^=]*)?=(?!=)", re.M)


def check_lesson_matches(nb, lesson, registry: dict) -> None:
    """GradeError when the notebook's cells belong to another lesson than its metadata says
    (grading cells of another lesson only, or none of this lesson's graded names defined while
    another lesson's are)."""
    own = f"{lesson.number:02d}"
    cells = [_source(c) for c in _code(nb)]
    ids = [i for source in cells for i in GRADE_CALL.findall(source)]
    prefixes = sorted({i.split(".")[0] for i in ids})
    other = None
    if ids and own not in prefixes:
        other = prefixes[0]
    else:
        defined = {a or b for source in cells for a, b in _TOP_LEVEL_NAME.findall(source)}
        wanted = {n for ex in registry.values() if ex.id.startswith(own + ".") for n in ex.uses}
        if wanted and not wanted & defined:
            theirs = sorted({ex.id.split(".")[0] for ex in registry.values()
                             if not ex.id.startswith(own + ".") and set(ex.uses) & defined})
            other = theirs[0] if len(theirs) == 1 else None
    if other is not None:
        raise GradeError("lesson-mismatch", f"the notebook's metadata says lesson {own}, but its cells "
                         f"are lesson {other}'s: nothing was graded. Grade it as lesson {other} (its "
                         f"metadata 'course.lesson'), or answer lesson {own}'s exercise")


def official_items(number: int) -> list[dict]:
    """The graded items of a lesson's exercise: id, max points, title (from the checks)."""
    from .authoring import load_all   # (the checks import torch: only when the items are asked for)
    lesson = next(l for l in LESSONS if l.number == number)
    nb = validate(json.loads(lesson.exercise.read_text(encoding="utf-8")))
    registry = load_all()
    return [{"id": s["id"], "max_points": registry[s["id"]].points if s["id"] in registry else 0,
             "title": registry[s["id"]].title if s["id"] in registry else "",
             "manual": bool(getattr(registry.get(s["id"]), "manual", False)),
             "rubric": list(getattr(registry.get(s["id"]), "rubric", ()))}
            for s in rebuild(nb, nb) if s["kind"] == "grade"]
