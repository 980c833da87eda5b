"""Step 2 of grading: run the rebuilt notebook in the learner's process and grade it, item by item.

`grade(path)` reads the notebook (notebook.py), then a `Run` keeps one learner process that has run
every cell (channel.py starts and kills it; proxy.py lets the checks use the learner's objects).
Per item: the static check for forbidden shortcuts (shortcuts.py), then the check under the item's
budget. A hung, crashed or flooding learner process is killed (its whole process group and uid)
and a fresh one, which skips the cells that killed an earlier one, serves the next item. The item's
budget counts only the time the learner's process takes (models the check loads, imports the
trip-wires need: before its clock starts); the whole notebook, the grader's own work included, has
a deadline (`notebook_timeout`, 10 minutes by default). The checks run here, in the grader
process: the learner's code never runs in this process and never sees a verdict.

Importing this module is cheap (no torch), for `course`'s commands and `course grade-class`: the
checks (authoring.py) and the proxies (proxy.py) import torch, so `grade` and `run_item` import
them when they run.
"""
from __future__ import annotations

import hashlib
import json
import secrets
import time

from ..shortcuts import forbidden_for, kernel_label, kernels_for, shortcut_feedback, transform
from .channel import Channel
from .errors import (CheckFailed, GradeError, LearnerDied, LearnerError, NotebookTimeout, OutOfTime, ProtocolError,
                     SandboxError, ShortcutUsed, Timeout)
from .notebook import check_lesson_matches, clean, lesson_of, printable, read_notebook, rebuild, validate

NOTEBOOK_TIMEOUT = 600.0
MAX_WRITTEN = 4000   # characters of a written answer carried into the report


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
    from .authoring import load_all
    deadline = time.monotonic() + notebook_timeout
    learner = read_notebook(path)
    lesson = lesson_of(learner, path)
    official = validate(json.loads(lesson.exercise.read_text(encoding="utf-8")), lesson.exercise.name)
    registry = load_all()
    check_lesson_matches(learner, lesson, registry)
    plan = rebuild(official, learner)
    run = Run(path, plan, registry, cell_timeout=cell_timeout,
              item_timeout=cell_timeout if item_timeout is None else item_timeout,
              start_timeout=start_timeout, limits=limits, hide=hide, seed=seed,
              deadline=deadline, notebook_timeout=notebook_timeout)
    try:
        items = [run.grade_item(step["id"]) for step in plan if step["kind"] == "grade"]
    finally:
        run.close()
    for item in items:
        if not 0 <= item["points"] <= item["max_points"]:  # explicit: `python -O` strips asserts
            raise AssertionError(f"{item['id']}: {item['points']} points out of {item['max_points']}")
    auto = [i for i in items if not i.get("manual")]
    return {"score": sum(i["points"] for i in auto), "max_score": sum(i["max_points"] for i in auto),
            "manual_max": sum(i["max_points"] for i in items if i.get("manual")), "items": items}


class Run:
    """One notebook's grading: the cells to run, and the learner process that has run them."""

    def __init__(self, path, plan: list[dict], registry: dict, *, cell_timeout: float, item_timeout: float,
                 start_timeout: float, limits, hide, seed: int | None, deadline: float, notebook_timeout: float):
        self.path, self.registry = path, registry
        self.cells = [s for s in plan if s["kind"] != "grade"]
        self.learner_sources = [c["source"] for c in self.cells if c["kind"] in ("answer", "added")]
        self.official_sources = [c["source"] for c in self.cells if c["kind"] == "setup"]
        self.forbidden = {s["id"]: forbidden_for(s["id"], getattr(registry.get(s["id"]), "forbids", ()))
                          for s in plan if s["kind"] == "grade"}
        self.cell_timeout, self.item_timeout, self.start_timeout = cell_timeout, item_timeout, start_timeout
        self.limits, self.hide, self.seed = limits, hide, seed
        self.deadline, self.notebook_timeout = deadline, notebook_timeout
        self.channel: Channel | None = None
        self.remote = None
        self.bad: dict[int, str] = {}    # cells that ended an earlier process (index -> why): skipped since
        self.errors: list[str] = []      # what the learner's cells raised in the current process

    # ------------------------------------------------------------ one item
    def grade_item(self, exercise_id: str) -> dict:
        ex = self.registry.get(exercise_id)
        max_points = int(ex.points) if ex is not None and type(ex.points) is int and ex.points >= 0 else 0
        item = {"id": exercise_id, "points": 0, "max_points": max_points, "passed": False, "feedback": ""}
        if ex is None:
            item["feedback"] = "unknown exercise"
            return item
        if time.monotonic() >= self.deadline:
            item["feedback"] = out_of_time(self.notebook_timeout)
            return item
        refused = static_check(ex, self.learner_sources, self.official_sources)
        if refused:
            item["feedback"] = clean(refused)
            return item
        try:
            remote = self.learner()
        except OutOfTime:
            item["feedback"] = out_of_time(self.notebook_timeout)
            return item
        passed, feedback = run_item(self.channel, remote, ex, self.item_timeout, self.seed, self.notebook_timeout)
        if passed is None:     # the process had to be killed
            self.channel.kill()
            passed = False
        if not passed and feedback.endswith("is not defined") and self.errors:
            feedback += f"; an answer cell raised {self.errors[-1]}"
        item.update(passed=bool(passed), points=max_points if passed else 0, feedback=clean(feedback))
        if getattr(ex, "manual", False):
            _manual(item, ex, remote if passed else None)
        return item

    # ------------------------------------------------------------ the learner's process
    def learner(self):
        """A live learner process that has run every cell (skipping cells that ended an earlier one)."""
        while self.channel is None or not self.channel.alive:
            self.close()
            self.channel = Channel(self.path, self.limits, hide=self.hide, deadline=self.deadline)
            self.remote = start(self.channel, self.forbidden, self.start_timeout)
            self._run_cells()
        return self.remote

    def _run_cells(self) -> None:
        """Every cell once; a cell that ends the process (a hang, a crash) is marked bad and the
        process killed, for `learner` to start a fresh one without it."""
        self.errors = []
        for index, cell in enumerate(self.cells):
            if index in self.bad:
                self._cell_error(cell, self.bad[index])
                continue
            self.channel.allow(self.cell_timeout)
            try:
                self.remote.exec_cell(cell["source"])
            except NotebookTimeout:
                raise OutOfTime() from None
            except (Timeout, LearnerDied, ProtocolError) as error:
                self.bad[index] = (f"a cell took longer than {self.cell_timeout:g} s" if isinstance(error, Timeout)
                                   else f"a cell ended the process ({clean(error, 120)})")
                self.channel.kill()
                return
            except Exception as error:  # noqa: BLE001 - the learner's exception, by name
                self._cell_error(cell, f"{getattr(error, 'type_name', type(error).__name__)}: {error}")

    def _cell_error(self, cell: dict, why: str) -> None:
        if cell["kind"] in ("answer", "added") and why:
            self.errors.append(clean(why, 200))

    def close(self) -> None:
        if self.channel is not None:
            self.channel.close()
        self.channel = self.remote = None


def start(channel: Channel, forbidden: dict[str, list[str]], start_timeout: float):
    """Start the channel's learner process and arm its trip-wires; returns the proxies' `Remote`.
    GradeError when the machine cannot (the message says what to fix); OutOfTime past the deadline."""
    from .proxy import Remote
    kernels = {item: {op: kernel_label(op, public) for op, public in kernels_for(names).items()}
               for item, names in forbidden.items()}
    try:
        channel.start()
        channel.allow(start_timeout)
        remote = Remote(channel)
        remote.init(forbidden, kernels)
        return remote
    except SandboxError as error:   # the machine, not the learner: say what to fix
        channel.close()
        raise GradeError("sandbox", str(error)) from None
    except NotebookTimeout:
        channel.close()
        raise OutOfTime() from None
    except (LearnerDied, ProtocolError) as error:
        channel.close()
        raise GradeError("sandbox", f"the grading process could not start ({type(error).__name__})") from None


def static_check(ex, learner_sources: list[str], official_sources: list[str]) -> str:
    """The shortcut rules' verdict on the learner's code ("" when none applies)."""
    try:
        return shortcut_feedback(ex.id, learner_sources, official_sources, ex.uses, getattr(ex, "forbids", ()),
                                 transform)
    except (RecursionError, MemoryError) as error:   # (the parser's limits are caught there)
        return f"not graded: your code could not be checked ({type(error).__name__}: nested too deeply?)"


def item_seed(seed: int, exercise_id: str) -> int:
    """The generator seed of one item's hidden cases, from a grading run's seed."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{exercise_id}".encode()).digest()[:4], "big") % 2**31


def out_of_time(notebook_timeout: float) -> str:
    return (f"not graded: the notebook's grading time ({notebook_timeout:g} s, the grader's work "
            "included) ran out before this item (slow cells, or items that had to be stopped)")


def run_item(channel: Channel, remote, ex, item_timeout: float, seed: int | None = None,
             notebook_timeout: float = NOTEBOOK_TIMEOUT):
    """(passed, feedback); passed is None when the learner's process had to be killed."""
    import torch

    from .authoring import passed_feedback
    remote.item = ex.id
    channel.allow(item_timeout)
    try:
        objects = []
        for name in ex.uses:
            try:
                objects.append(remote.get_global(name))
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
        return None, out_of_time(notebook_timeout)
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
    return True, passed_feedback(note)


def _manual(item: dict, ex, remote) -> None:
    """A written answer: no points from the machine; the report carries the text and the rubric
    for the person who grades it (`remote` None: nothing was written)."""
    answer = ""
    if remote is not None:
        try:
            answer = remote.get_global(ex.uses[0])
        except Exception:  # noqa: BLE001 - the check just read it; a vanished value reads as empty
            answer = ""
    answer = printable(answer)[:MAX_WRITTEN] if isinstance(answer, str) else ""
    item.update(points=0, manual=True, answer=answer, rubric=list(ex.rubric),
                feedback=("to be graded by the instructor" if answer else
                          f"to be graded by the instructor; not written yet: {item['feedback']}"))


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
