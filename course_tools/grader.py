"""`course grade PATH`: grade a learner's exercise notebook without trusting it.

1. The notebook is read as untrusted bytes: size-capped, regular file only (no symlink,
   directory, `.`/`..`), strict UTF-8 JSON, nbformat 4, every cell field checked. Anything else is
   a `GradeError` (one JSON error, exit status 2 on the command line).
2. The lesson comes from the notebook's metadata (`metadata.course.lesson`, written by
   `course exercises`), so a renamed download still grades; the official exercise supplies
   every non-answer cell. The learner contributes the answer cells (matched by id, then by
   order) and cells they added (run where they added them); IPython magics are run.
3. The cells run in a separate, limited, unprivileged process (sandbox.py, driver.py). The
   checks run here, in the grader process, on proxies of the learner's objects (remote.py):
   the learner's code never runs in this process and never sees a verdict.
4. Per item: a static check for forbidden shortcuts (shortcuts.py), then the check under a
   wall-clock deadline enforced from here; a hung, crashed or flooding learner process is
   killed (its whole process group and uid) and restarted for the next item. The item's
   deadline counts only the time the learner's process takes (models the check loads, imports
   the trip-wires need: before its clock starts); the whole notebook, the grader's own work
   included, has a budget (`notebook_timeout`, 10 minutes by default).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import stat
import time
from pathlib import Path

from . import ROOT
# the answer tag and the grading call: one definition, shared with grading.py and selfcheck.py
from .notebook_cells import ANSWER_TAG, GRADE_CALL

# This module imports only the standard library (and the two above) at the top, so importing it
# stays cheap (no torch) for `course`'s commands and `course grade-class`; the checks (grading.py,
# which imports torch) and the sandbox are imported by the functions that run them.
MAX_NOTEBOOK_BYTES = 8 * 1024**2
MAX_CELLS = 500
MAX_FEEDBACK = 500
NOTEBOOK_TIMEOUT = 600.0


class GradeError(ValueError):
    """The submission cannot be graded; `code` is a stable, machine-readable reason."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code

    def as_json(self) -> dict:
        return {"error": {"code": self.code, "message": str(self)}}


# ------------------------------------------------------------------ reading untrusted notebooks

def _name(path) -> str:
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
        raise GradeError("not-found", f"path: no such file {_name(raw)!r}") from None
    if stat.S_ISLNK(info.st_mode):
        raise GradeError("not-a-file", f"path: {_name(raw)!r} is a symbolic link; give the file itself")
    if not stat.S_ISREG(info.st_mode):
        raise GradeError("not-a-file", f"path: {_name(raw)!r} is not a regular file")
    if info.st_size > MAX_NOTEBOOK_BYTES:
        raise GradeError("too-large", f"{_name(raw)!r} is {info.st_size} bytes; the limit is "
                         f"{MAX_NOTEBOOK_BYTES} (clear the outputs and try again)")
    try:
        fd = os.open(raw, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_NOTEBOOK_BYTES + 1)
    except OSError:
        raise GradeError("unreadable", f"{_name(raw)!r} could not be read") from None
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise GradeError("too-large", f"{_name(raw)!r} is larger than {MAX_NOTEBOOK_BYTES} bytes")
    try:
        nb = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise GradeError("not-a-notebook", f"{_name(raw)!r} is not a notebook (not valid UTF-8 JSON)") from None
    return validate(nb, _name(raw))


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
    from .manifest import LESSONS
    graded = {l.number: l for l in LESSONS if l.has_exercise and l.exercise and l.exercise.exists()}
    course = nb.get("metadata", {}).get("course")
    number = course.get("lesson") if isinstance(course, dict) else None
    if isinstance(number, str) and number.strip().isdigit() and len(number.strip()) <= 3:
        number = int(number.strip())          # "01", as a hand-edited notebook may say
    if number is not None and (type(number) is not int or number not in graded):
        known = ", ".join(f"{n:02d}" for n in sorted(graded))
        raise GradeError("unknown-lesson", f"the notebook's metadata 'course.lesson' is "
                         f"{_clean(repr(number), 40)}, not the number of a lesson with an exercise "
                         f"({known})")
    if type(number) is not int or number not in graded:
        name = os.path.basename(_path_text(path))
        lesson = next((l for l in LESSONS if name == l.notebook.name), None)
        if number is None and lesson is not None:
            raise GradeError("not-an-exercise", f"{_name(name)!r} is lesson {lesson.number:02d}'s notebook, "
                             "not an exercise: nothing was graded or recorded. Grade its exercise: "
                             f"course start {lesson.number:02d}, answer in work/{lesson.stem}_exercise.ipynb, "
                             f"then course grade {lesson.number:02d}")
        known = ", ".join(f"{n:02d}" for n in sorted(graded))
        raise GradeError("unknown-lesson", "the notebook does not say which lesson it belongs to "
                         f"(metadata 'course.lesson' is missing or not one of {known}): is it a "
                         "course exercise (exercises/, or your copy from `course start NN`)?")
    return graded[number]


def official_for(path: Path) -> Path:
    """The official exercise notebook that `path` is a copy of (from its metadata)."""
    return lesson_of(read_notebook(path), path).exercise


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
    import ast

    from .shortcuts import _PARSE_ERRORS, _parse, transform
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


def check_lesson_matches(nb, lesson) -> None:
    """GradeError when the notebook's cells belong to another lesson than its metadata says
    (grading cells of another lesson only, or none of this lesson's graded names defined while
    another lesson's are)."""
    from .grading import load_all
    own = f"{lesson.number:02d}"
    cells = [_source(c) for c in _code(nb)]
    ids = [i for source in cells for i in GRADE_CALL.findall(source)]
    prefixes = sorted({i.split(".")[0] for i in ids})
    other = None
    if ids and own not in prefixes:
        other = prefixes[0]
    else:
        registry = load_all()
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
    from .grading import load_all
    from .manifest import LESSONS
    lesson = next(l for l in LESSONS if l.number == number)
    nb = validate(json.loads(lesson.exercise.read_text(encoding="utf-8")))
    registry = load_all()
    return [{"id": s["id"], "max_points": registry[s["id"]].points if s["id"] in registry else 0,
             "title": registry[s["id"]].title if s["id"] in registry else "",
             "manual": bool(getattr(registry.get(s["id"]), "manual", False)),
             "rubric": list(getattr(registry.get(s["id"]), "rubric", ()))}
            for s in rebuild(nb, nb) if s["kind"] == "grade"]


# ------------------------------------------------------------------ grading

def _clean(text: str, limit: int = MAX_FEEDBACK) -> str:
    text = "".join(ch if ch.isprintable() or ch == "\n" else "?" for ch in str(text))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _transform(source: str) -> str:
    from .shortcuts import transform
    return transform(source)


def grade(path, cell_timeout: float = 60.0, item_timeout: float | None = None,
          start_timeout: float = 180.0, limits=None, hide=(), seed: int | None = None,
          notebook_timeout: float = NOTEBOOK_TIMEOUT) -> dict:
    """Grade the notebook at `path`; returns {"score", "max_score", "items": [...]}.
    `cell_timeout`, `item_timeout`: seconds of the learner's process per cell and per item (the
    grader's own work not counted); `notebook_timeout`: the wall-clock budget of the whole
    notebook, everything included (items left when it runs out score 0 and say so).
    `hide`: folders the learner's process must not see (as root; e.g. the class's submissions).
    `seed`: the hidden cases' seed (each item's generator: `item_seed(seed, id)`, in this process
    only); None draws fresh cases per item. The same seed regrades to the same points.
    Raises GradeError for a notebook that cannot be graded."""
    from .grading import load_all
    from .remote import LearnerDied, NotebookTimeout, ProtocolError, Session, Timeout
    from .sandbox import Limits, SandboxError
    from .shortcuts import forbidden_for, shortcut_feedback

    deadline = time.monotonic() + notebook_timeout
    item_timeout = cell_timeout if item_timeout is None else item_timeout
    learner = read_notebook(path)
    lesson = lesson_of(learner, path)
    official = validate(json.loads(lesson.exercise.read_text(encoding="utf-8")), lesson.exercise.name)
    check_lesson_matches(learner, lesson)
    plan = rebuild(official, learner)
    cells = [s for s in plan if s["kind"] != "grade"]
    graded_ids = [s["id"] for s in plan if s["kind"] == "grade"]
    registry = load_all()
    learner_sources = [c["source"] for c in cells if c["kind"] in ("answer", "added")]
    official_sources = [c["source"] for c in cells if c["kind"] == "setup"]
    forbidden = {i: forbidden_for(i, getattr(registry.get(i), "forbids", ())) for i in graded_ids}

    state = {"session": None, "bad": set(), "errors": []}

    def cell_error(index, cell, why):
        if cell["kind"] in ("answer", "added") and why:
            state["errors"].append(_clean(why, 200))

    def fresh_session():
        """A learner process that has run every cell (skipping cells that killed an earlier one)."""
        while True:
            if state["session"] is not None:
                state["session"].close()
            try:
                session = state["session"] = Session(path, forbidden, limits or Limits(), hide=hide)
                session.deadline = deadline
                session.start(start_timeout)
            except SandboxError as error:   # the machine, not the learner: say what to fix
                if state["session"] is not None:
                    state["session"].close()
                state["session"] = None
                raise GradeError("sandbox", str(error)) from None
            except NotebookTimeout:
                session.close()
                state["session"] = None
                raise _OutOfTime() from None
            except (LearnerDied, ProtocolError) as error:
                session.close()
                state["session"] = None
                raise GradeError("sandbox", f"the grading process could not start ({type(error).__name__})")
            restart = False
            state["errors"] = []
            for index, cell in enumerate(cells):
                if index in state["bad"]:
                    cell_error(index, cell, state["bad_why"][index])
                    continue
                session.budget = cell_timeout
                try:
                    session.exec_cell(cell["source"])
                except NotebookTimeout:
                    raise _OutOfTime() from None
                except (Timeout, LearnerDied, ProtocolError) as error:
                    why = (f"a cell took longer than {cell_timeout:g} s" if isinstance(error, Timeout)
                           else f"a cell ended the process ({_clean(error, 120)})")
                    state["bad"].add(index)
                    state.setdefault("bad_why", {})[index] = why
                    session.kill()
                    restart = True
                    break
                except Exception as error:  # noqa: BLE001 - the learner's exception, by name
                    cell_error(index, cell, f"{getattr(error, 'type_name', type(error).__name__)}: {error}")
            if not restart:
                return session

    state["bad_why"] = {}
    items = []
    try:
        for exercise_id in graded_ids:
            ex = registry.get(exercise_id)
            max_points = int(ex.points) if ex is not None and type(ex.points) is int and ex.points >= 0 else 0
            item = {"id": exercise_id, "points": 0, "max_points": max_points, "passed": False, "feedback": ""}
            items.append(item)
            if ex is None:
                item["feedback"] = "unknown exercise"
                continue
            if time.monotonic() >= deadline:
                item["feedback"] = _out_of_time(notebook_timeout)
                continue
            try:
                refused = shortcut_feedback(exercise_id, learner_sources, official_sources, ex.uses,
                                            getattr(ex, "forbids", ()), _transform)
            except (RecursionError, MemoryError) as error:   # (the parser's limits are caught there)
                refused = f"not graded: your code could not be checked ({type(error).__name__}: nested too deeply?)"
            if refused:
                item["feedback"] = _clean(refused)
                continue
            session = state["session"]
            try:
                if session is None or not session.sandbox.alive:
                    session = fresh_session()
            except _OutOfTime:
                item["feedback"] = _out_of_time(notebook_timeout)
                continue
            passed, feedback = run_item(session, ex, item_timeout, seed, notebook_timeout)
            if passed is None:     # the process had to be killed
                session.kill()
                passed = False
            if not passed and feedback.endswith("is not defined") and state["errors"]:
                feedback += f"; an answer cell raised {state['errors'][-1]}"
            item["passed"] = bool(passed)
            item["points"] = max_points if passed else 0
            item["feedback"] = _clean(feedback)
            if getattr(ex, "manual", False):
                _manual(item, ex, session if passed else None)
    finally:
        if state["session"] is not None:
            state["session"].close()
    for item in items:
        if not 0 <= item["points"] <= item["max_points"]:  # explicit: `python -O` strips asserts
            raise AssertionError(f"{item['id']}: {item['points']} points out of {item['max_points']}")
    auto = [i for i in items if not i.get("manual")]
    return {"score": sum(i["points"] for i in auto), "max_score": sum(i["max_points"] for i in auto),
            "manual_max": sum(i["max_points"] for i in items if i.get("manual")), "items": items}


MAX_WRITTEN = 4000   # characters of a written answer carried into the report


def _manual(item: dict, ex, session) -> None:
    """A written answer: no points from the machine; the report carries the text and the rubric
    for the person who grades it (`session` None: nothing was written)."""
    answer = ""
    if session is not None:
        try:
            answer = session.get_global(ex.uses[0])
        except Exception:  # noqa: BLE001 - the check just read it; a vanished value reads as empty
            answer = ""
    answer = printable(answer)[:MAX_WRITTEN] if isinstance(answer, str) else ""
    item.update(points=0, manual=True, answer=answer, rubric=list(ex.rubric),
                feedback=("to be graded by the instructor" if answer else
                          f"to be graded by the instructor; not written yet: {item['feedback']}"))


def item_seed(seed: int, exercise_id: str) -> int:
    """The generator seed of one item's hidden cases, from a grading run's seed."""
    import hashlib
    return int.from_bytes(hashlib.sha256(f"{seed}:{exercise_id}".encode()).digest()[:4], "big") % 2**31


class _OutOfTime(Exception):
    """The notebook's grading budget ran out."""


def _out_of_time(notebook_timeout: float) -> str:
    return (f"not graded: the notebook's grading time ({notebook_timeout:g} s, the grader's work "
            "included) ran out before this item (slow cells, or items that had to be stopped)")


def run_item(session, ex, item_timeout: float, seed: int | None = None,
             notebook_timeout: float = NOTEBOOK_TIMEOUT):
    """(passed, feedback); passed is None when the learner's process had to be killed."""
    import torch
    from .grading import CheckFailed
    from .remote import LearnerDied, LearnerError, NotebookTimeout, ProtocolError, ShortcutUsed, Timeout

    session.item = ex.id
    session.budget = item_timeout
    try:
        objects = []
        for name in ex.uses:
            try:
                objects.append(session.get_global(name))
            except NameError:
                return False, f"{name} is not defined"
        with torch.random.fork_rng(devices=[]):
            note = ex.run(*objects, rng=torch.Generator().manual_seed(
                secrets.randbelow(2**31) if seed is None else item_seed(seed, ex.id)))
    except CheckFailed as failure:
        return False, str(failure)
    except ShortcutUsed as used:
        return False, str(used)
    except NotebookTimeout:
        return None, _out_of_time(notebook_timeout)
    except Timeout:
        return None, f"took longer than {item_timeout:g} s (an infinite loop?)"
    except ProtocolError as error:
        return None, f"the learner's process sent a malformed reply ({error})"
    except LearnerDied as died:
        return None, f"your code ended the process: {died}"
    except NotImplementedError:
        return False, "not implemented yet (the cell still raises NotImplementedError)"
    except LearnerError as error:
        return False, f"your code raised {error.type_name}: {error}"
    except RecursionError:
        return False, "your code raised RecursionError (a recursion without end, or data nested too deeply)"
    except Exception as error:  # noqa: BLE001 - from the learner (re-raised by name) or its data
        return False, f"your code raised {type(error).__name__}: {error}"
    from .grading import passed_feedback
    return True, passed_feedback(note)


def format_report(report: dict, name: str) -> str:
    import pandas as pd
    rows = [{**i, "points": "by hand" if i.get("manual") else i["points"]} for i in report["items"]]
    table = pd.DataFrame(rows, columns=["id", "points", "max_points", "passed", "feedback"])
    with pd.option_context("display.max_colwidth", 120, "display.width", 200):
        body = table.to_string(index=False)
    text = f"{printable(name)}\n{body}\n\nscore: {report['score']} / {report['max_score']}"
    for item in report["items"]:
        if item.get("manual") and item.get("answer"):
            rubric = "\n".join(f"  - {point}" for point in item["rubric"])
            text += (f"\n\n{item['id']} ({item['max_points']} points, to be graded by the instructor) - "
                     f"your answer:\n  {item['answer'].strip()}\nWhat the instructor looks for:\n{rubric}")
    manual = report.get("manual_max", 0)
    if manual:
        text += f"\n\n+ {manual} points for the written answer, graded by the instructor"
    return text
