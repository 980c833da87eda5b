"""`course interview --whiteboard [sdpa|mha|mlm]`: a timed whiteboard drill, graded by the course's grader.

Three classic interview tasks, each a function or class to write from a blank page:

- `sdpa`: scaled dot-product attention with a key padding mask (about 10 minutes);
- `mha`: masked multi-head attention, an nn.Module with its own projections (about 20 minutes);
- `mlm`: BERT's masked-language-model masking, 15% and 80/10/10 (about 15 minutes).

`course interview --whiteboard sdpa` writes a starter file `work/whiteboard/sdpa.py` (the task
statement as its docstring and the signature, never the answer; an earlier attempt is kept in
`work/whiteboard/attempts/`), starts the clock and waits: the learner writes the answer in their
editor and presses Enter. The file is then graded like an exercise notebook - the static shortcut
check (shortcuts.py), then the learner's code in the grader's sandbox (grader/channel.py, grader/proxy.py) and
the checks (checks/whiteboard.py) on hidden cases of a fresh seed - and each item's verdict is
printed with its diagnosis, with the minutes taken. `--grade` grades the file later (another
terminal, after a break: the clock kept running). Each grading appends a record (task, points,
max, seconds, timestamp, per-item points) to `build/whiteboard.jsonl` (or `$COURSE_WHITEBOARD_FILE`);
a full score stops the clock.

`--lang zh` speaks Chinese throughout: the statement, the starter's docstring, the frame and the
diagnoses (DIAGNOSES in checks/whiteboard.py and GENERIC in whiteboard_zh.py translate the grader's
feedback).

This module is the drill's terminal session, its files (the starter, the clock, the records) and the
grading of the file; whiteboard_tasks.py holds the three tasks' texts and starters, whiteboard_zh.py
the Chinese of the grader's feedback.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import random
import time
from pathlib import Path

from . import ROOT
from .whiteboard_tasks import ITEM_TITLES, TASKS, command, starter
from .whiteboard_zh import say

RECORD_ENV = "COURSE_WHITEBOARD_FILE"
MAX_SOURCE_BYTES = 256 * 1024

#: The terminal frame, per language (nothing English in zh).
WORDS = {
    "en": {
        "header": "Whiteboard drill: {title} - about {minutes} minutes.",
        "file": "Write your answer in {path} (your editor, no notebook, no search: as at a whiteboard).",
        "kept": "(your earlier attempt is kept in {path})",
        "clock": "The clock started at {time}.",
        "enter": "Press Enter here when you are done (or grade later: {command}) > ",
        "later": "The clock keeps running; grade when you are done: {command}",
        "no_file": "no {path}: start the drill first ({command})",
        "no_task": "no whiteboard drill started yet: course interview --whiteboard [sdpa|mha|mlm]",
        "graded": "Grading {path} on hidden cases (the course's grader, a few seconds)...",
        "unchanged": "{path} is still the starter: write your answer in it first",
        "pass": "PASS", "fail": "FAIL",
        "score_timed": "score {points}/{max} in {minutes:.1f} minutes (budget {budget} minutes{over})",
        "over": "; over budget",
        "score_untimed": "score {points}/{max} (untimed: no clock was running)",
        "done": "Full marks: the clock is stopped. Recorded in {path}",
        "again": "The clock keeps running: fix the file and grade again ({command}). Recorded in {path}",
        "error": "not graded: {message}",
        "picked": "The interviewer picks: {task}",
    },
    "zh": {
        "header": "白板练习：{title}——建议用时约 {minutes} 分钟。",
        "file": "在 {path} 中写出答案（用你的编辑器，不用笔记本、不查资料：就像在白板上）。",
        "kept": "（上一次的作答保存在 {path}）",
        "clock": "计时从 {time} 开始。",
        "enter": "完成后在这里按回车（或稍后评分：{command}）> ",
        "later": "计时继续；完成后评分：{command}",
        "no_file": "没有 {path}：请先开始练习（{command}）",
        "no_task": "还没有开始白板练习：course interview --whiteboard [sdpa|mha|mlm]",
        "graded": "正在用隐藏用例为 {path} 评分（课程的评分器，需要几秒钟）……",
        "unchanged": "{path} 还是初始文件：请先在里面写出答案",
        "pass": "通过", "fail": "未通过",
        "score_timed": "得分 {points}/{max}，用时 {minutes:.1f} 分钟（建议 {budget} 分钟{over}）",
        "over": "；超时",
        "score_untimed": "得分 {points}/{max}（未计时：没有正在进行的计时）",
        "done": "满分：计时停止。记录：{path}",
        "again": "计时继续：改好文件后再次评分（{command}）。记录：{path}",
        "error": "未评分：{message}",
        "picked": "面试官出题：{task}",
    },
}

# ---------------------------------------------------------------- files: the starter, the clock, the records

def whiteboard_dir() -> Path:
    from .workspace import work_dir
    return work_dir() / "whiteboard"


def record_file() -> Path:
    return Path(os.environ.get(RECORD_ENV) or ROOT / "build" / "whiteboard.jsonl")


def _shown(path: Path) -> str:
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def _clock_path() -> Path:
    return whiteboard_dir() / ".clock.json"


def _clock() -> dict:
    try:
        data = json.loads(_clock_path().read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_clock(clock: dict) -> None:
    _clock_path().parent.mkdir(parents=True, exist_ok=True)
    _clock_path().write_text(json.dumps(clock, indent=1), encoding="utf-8")


def start(task: str, lang: str = "en", now: float | None = None) -> tuple[Path, Path | None]:
    """Write the starter file and start the clock: (the file, where an earlier attempt was kept or None)."""
    path = whiteboard_dir() / f"{task}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = None
    if path.exists():
        old = path.read_text(encoding="utf-8", errors="replace")
        if old not in (starter(task, "en"), starter(task, "zh")):
            stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            kept = path.parent / "attempts" / f"{task}-{stamp}.py"
            kept.parent.mkdir(exist_ok=True)
            path.replace(kept)
    path.write_text(starter(task, lang), encoding="utf-8")
    clock = _clock()
    clock[task] = {"start": time.time() if now is None else now, "attempts": 0}   # once the file is there
    _save_clock(clock)
    return path, kept


def record(task: str, result: dict, seconds: float | None, lang: str, attempt: int,
           when: dt.datetime | None = None) -> dict:
    """Append one graded attempt to the record file; returns the entry."""
    when = when or dt.datetime.now()
    entry = {"when": when.isoformat(timespec="seconds"), "task": task, "points": result["score"],
             "max": result["max_score"], "seconds": None if seconds is None else round(seconds, 1),
             "budget_seconds": TASKS[task].minutes * 60, "attempt": attempt, "lang": lang,
             "items": {i["id"]: i["points"] for i in result["items"]}}
    path = record_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return entry


def history(path: Path | None = None) -> list[dict]:
    """The drill's records: the same JSON-lines reading as the interview's log."""
    from .interview import history as read_log
    return read_log(record_file() if path is None else path)


# ---------------------------------------------------------------- grading: the course's grader on a .py file

def read_source(path) -> str:
    from .grader.errors import GradeError
    from .grader.notebook import shown_name
    path = Path(path)
    if not path.is_file():
        raise GradeError("not-found", f"no such file {shown_name(path)!r}")
    data = path.read_bytes()
    if len(data) > MAX_SOURCE_BYTES:
        raise GradeError("too-large", f"{shown_name(path)!r} is {len(data)} bytes; the limit is {MAX_SOURCE_BYTES}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise GradeError("unreadable", f"{shown_name(path)!r} is not UTF-8 text") from None


def grade_source(source: str, task: str, *, seed: int | None = None, item_timeout: float = 60.0,
                 start_timeout: float = 180.0, limits=None) -> dict:
    """Grade the learner's code `source` for `task` as `course grade` grades a notebook: per item, the static
    shortcut check, then the check on hidden cases (`seed`: None draws fresh ones) against the learner's objects
    in a sandboxed process. Returns {"task", "score", "max_score", "items": [{"id", "points", "max_points",
    "passed", "feedback"}]}; GradeError when the sandbox cannot start."""
    from .checks.whiteboard import WHITEBOARD
    from .grader.channel import Channel
    from .grader.errors import LearnerDied, ProtocolError, Timeout
    from .grader.notebook import clean
    from .grader.run import run_item, start, static_check
    from .shortcuts import forbidden_for

    exercises = [WHITEBOARD[i] for i in TASKS[task].items]
    forbidden = {ex.id: forbidden_for(ex.id, ex.forbids) for ex in exercises}
    state = {"channel": None, "remote": None, "raised": "", "fatal": ""}

    def learner():
        """A live learner process that has run the file (a fresh one after a kill)."""
        if state["channel"] is not None and state["channel"].alive:
            return state["channel"], state["remote"]
        if state["channel"] is not None:
            state["channel"].close()
        channel = state["channel"] = Channel(None, limits)
        remote = state["remote"] = start(channel, forbidden, start_timeout)
        channel.allow(item_timeout)
        remote.exec_cell("__name__ = 'whiteboard'")      # the file's `if __name__ == "__main__":` block does not run
        try:
            remote.exec_cell(source)
        except Timeout:
            state["fatal"] = f"your file took longer than {item_timeout:g} s to run"
        except (LearnerDied, ProtocolError) as error:
            state["fatal"] = f"your code ended the process: {clean(error, 120)}"
        except Exception as error:  # noqa: BLE001 - the learner's exception, by name
            state["raised"] = clean(f"{getattr(error, 'type_name', type(error).__name__)}: {error}", 200)
        return channel, remote

    items = []
    try:
        for ex in exercises:
            item = {"id": ex.id, "points": 0, "max_points": ex.points, "passed": False, "feedback": ""}
            items.append(item)
            refused = static_check(ex, [source], [])
            if refused:
                item["feedback"] = clean(refused)
                continue
            if state["fatal"]:
                item["feedback"] = state["fatal"]
                continue
            channel, remote = learner()
            if state["fatal"]:
                item["feedback"] = state["fatal"]
                continue
            passed, feedback = run_item(channel, remote, ex, item_timeout, seed)
            if passed is None:        # the learner's process had to be killed: a fresh one for the next item
                channel.kill()
                passed = False
            if not passed and feedback.endswith("is not defined") and state["raised"]:
                feedback += f"; your file raised {state['raised']}"
            item.update(passed=bool(passed), points=ex.points if passed else 0, feedback=clean(feedback))
    finally:
        if state["channel"] is not None:
            state["channel"].close()
    return {"task": task, "score": sum(i["points"] for i in items),
            "max_score": sum(i["max_points"] for i in items), "items": items}


def grade_file(path, task: str, **kwargs) -> dict:
    """`grade_source` on the file at `path` (GradeError when it cannot be read)."""
    return grade_source(read_source(path), task, **kwargs)


# ---------------------------------------------------------------- the terminal session

def report(result: dict, lang: str = "en") -> list[str]:
    """One line per item: the verdict, the points, the title, and on a failure the diagnosis."""
    w = WORDS[lang]
    lines = []
    for item in result["items"]:
        en, zh = ITEM_TITLES.get(item["id"], (item["id"], item["id"]))
        mark = w["pass"] if item["passed"] else w["fail"]
        lines.append(f"  {mark:<4} {item['points']}/{item['max_points']}  {item['id']}  {zh if lang == 'zh' else en}")
        if not item["passed"]:
            lines.append(f"        {say(item['feedback'], lang)}")
    return lines


def _unchanged(path: Path, task: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") in (starter(task, "en"), starter(task, "zh"))
    except (OSError, UnicodeDecodeError):
        return False


def finish(task: str, lang: str = "en", write=print, now: float | None = None, **grade_kwargs) -> int:
    """Grade work/whiteboard/<task>.py, print the verdicts and the time, append the record. 0 on full marks."""
    from .grader.errors import GradeError
    w = WORDS[lang]
    now = time.time() if now is None else now
    path = whiteboard_dir() / f"{task}.py"
    if not path.exists():
        write(w["no_file"].format(path=_shown(path), command=command(task, lang)))
        return 2
    if _unchanged(path, task):
        write(w["unchanged"].format(path=_shown(path)))
        return 2
    clock = _clock()
    running = clock.get(task) if isinstance(clock.get(task), dict) else None
    seconds = max(0.0, now - float(running["start"])) if running else None
    write(w["graded"].format(path=_shown(path)))
    try:
        result = grade_file(path, task, **grade_kwargs)
    except GradeError as error:
        write(w["error"].format(message=str(error)))
        return 2
    for line in report(result, lang):
        write(line)
    full = result["score"] == result["max_score"]
    budget = TASKS[task].minutes
    if seconds is None:
        write(w["score_untimed"].format(points=result["score"], max=result["max_score"]))
    else:
        write(w["score_timed"].format(points=result["score"], max=result["max_score"], minutes=seconds / 60,
                                      budget=budget, over=w["over"] if seconds > budget * 60 else ""))
    attempt = (int(running.get("attempts", 0)) + 1) if running else 1
    record(task, result, seconds, lang, attempt)
    if running:
        if full:
            clock.pop(task, None)
        else:
            clock[task] = {**running, "attempts": attempt}
        _save_clock(clock)
    write((w["done"] if full else w["again"]).format(path=_shown(record_file()), command=command(task, lang, True)))
    return 0 if full else 1


def main(task: str | None, lang: str = "en", grade_only: bool = False, read=input, write=print,
         rng=None, **grade_kwargs) -> int:
    """`course interview --whiteboard [TASK] [--grade]`: start the drill (a task picked at random when none
    is named), wait for Enter, grade; or, with `grade_only`, grade the file (the task started last when none)."""
    lang = "zh" if lang == "zh" else "en"
    w = WORDS[lang]
    if task not in TASKS:
        if grade_only:
            clock = _clock()
            started = [t for t in clock if t in TASKS and isinstance(clock[t], dict)]
            task = max(started, key=lambda t: clock[t].get("start", 0), default=None)
            if task is None:
                write(w["no_task"])
                return 2
        else:
            task = (rng or random.Random()).choice(sorted(TASKS))
            write(w["picked"].format(task=task))
    if grade_only:
        return finish(task, lang, write, **grade_kwargs)
    spec = TASKS[task]
    path, kept = start(task, lang)
    write("\n" + w["header"].format(title=spec.title[lang], minutes=spec.minutes))
    write("")
    write(spec.statement[lang])
    write("")
    write(w["file"].format(path=_shown(path)))
    if kept is not None:
        write(w["kept"].format(path=_shown(kept)))
    write(w["clock"].format(time=dt.datetime.now().strftime("%H:%M")))
    while True:
        try:
            read(w["enter"].format(command=command(task, lang, True)))
        except (EOFError, KeyboardInterrupt):
            write("\n" + w["later"].format(command=command(task, lang, True)))
            return 0
        if not _unchanged(path, task):
            return finish(task, lang, write, **grade_kwargs)
        write(w["unchanged"].format(path=_shown(path)))
