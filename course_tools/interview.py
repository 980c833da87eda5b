"""Interview practice: each lesson's question asked cold, answers checked against the course's
own measurements, and the items answered wrong brought back sooner.

The items (numeric, choice, explain) and how an answer is checked are `course_lib.quiz`'s: the
same ones the lesson's "Check yourself" cell and the website ask.

`course interview` asks them in the terminal. Each answer is appended to `build/interview.jsonl`
(or `$COURSE_INTERVIEW_FILE`), and the items are scheduled by a Leitner system: an item answered
right moves up a box, wrong goes back to box 1; box k is due again after `BOX_DAYS[k]` days, so an
item answered wrong comes back in the next session and one answered right five times in a month.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from course_lib.quiz import (BOX_DAYS, Card, InterviewError, Item, Verdict, accepted_range,  # noqa: F401
                             check, claim_ranges, load_card, parse_card, short_answers)

from . import ROOT
from .manifest import LESSONS

INTERVIEW_ENV = "COURSE_INTERVIEW_FILE"


def interview_file() -> Path:
    return Path(os.environ.get(INTERVIEW_ENV) or ROOT / "build" / "interview.jsonl")


def all_cards() -> list[Card]:
    return [card for card in (load_card(lesson.number, lesson.notebook) for lesson in LESSONS
                              if lesson.number) if card]


# --- history and scheduling --------------------------------------------------------------------

def history(path: Path | None = None) -> list[dict]:
    path = interview_file() if path is None else path
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue  # a line cut short by an interrupted write
    return entries


def next_box(box: int, correct: bool) -> int:
    """The Leitner rule: right moves an item up a box (at most the last), wrong sends it back to 1."""
    return min(box + 1, max(BOX_DAYS)) if correct else 1


def boxes(entries: list[dict]) -> dict[str, dict]:
    """Per item: its Leitner box, when it was last answered and when it is due again."""
    state: dict[str, dict] = {}
    for entry in entries:
        if entry.get("correct") is None:
            continue
        box = state.get(entry["item"], {}).get("box", 1)
        box = next_box(box, entry["correct"])
        when = dt.datetime.fromisoformat(entry["when"])
        state[entry["item"]] = {"box": box, "last": when, "due": when + dt.timedelta(days=BOX_DAYS[box]),
                                "correct": bool(entry["correct"])}
    return state


def schedule(items: list[Item], entries: list[dict], now: dt.datetime | None = None,
             n: int | None = None) -> list[Item]:
    """The items to ask now: due ones first (never-seen and low boxes first: weakest first), then the
    rest in the same order; at most `n`."""
    now = now or dt.datetime.now()
    state = boxes(entries)

    def key(item: Item):
        s = state.get(item.id)
        if s is None:
            return (0, 0, 0.0, item.id)                        # never answered: due, weakest
        due = s["due"] <= now
        return (0 if due else 1, s["box"], s["last"].timestamp(), item.id)

    ordered = sorted(items, key=key)
    return ordered[:n] if n else ordered


def record(item: Item, answer: str, verdict: Verdict, path: Path | None = None,
           when: dt.datetime | None = None) -> dict:
    path = interview_file() if path is None else path
    before = boxes(history(path)).get(item.id, {}).get("box", 1)
    box = next_box(before, verdict.correct) if verdict.correct is not None else before
    when = when or dt.datetime.now()
    entry = {"when": when.isoformat(timespec="seconds"), "lesson": f"{item.lesson:02d}", "item": item.id,
             "kind": item.kind, "answer": answer, "correct": verdict.correct, "box": box,
             "due": (when + dt.timedelta(days=BOX_DAYS[box])).isoformat(timespec="seconds")}
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return entry


def scores(entries: list[dict] | None = None) -> dict[str, str]:
    """Per lesson "NN": 'right/answered' over each item's latest judged answer."""
    state = boxes(history() if entries is None else entries)
    per: dict[str, list[bool]] = {}
    for item_id, s in state.items():
        per.setdefault(item_id[:2], []).append(s["correct"])
    return {lesson: f"{sum(v)}/{len(v)}" for lesson, v in per.items()}


# --- the terminal session ----------------------------------------------------------------------

def lessons_run_so_far() -> set[int]:
    """Lessons the learner has executed (`course run` or a graded exercise); empty when none."""
    from .progress import last_grades
    done = {int(k) for k in last_grades()}
    executed = ROOT / "build" / "notebooks"
    if executed.exists():
        done |= {int(p.name[:2]) for p in executed.glob("[0-9][0-9]_*.ipynb")}
    return done


def run_session(items: list[Item], lang: str = "en", read=input, write=print,
                ranges: dict | None = None, short_answers: dict | None = None) -> list[dict]:
    """Ask each item, check, record. `read` raises EOFError when the input ends (stops early)."""
    ranges = claim_ranges() if ranges is None else ranges
    recorded = []
    for number, item in enumerate(items, 1):
        write(f"\n[{number}/{len(items)}] lesson {item.lesson:02d} · {item.kind}")
        write(item.text("question", lang))
        if item.kind == "choice":
            for letter, option in zip("abcdefgh", item.options):
                write(f"  {letter}) {option.get(lang) or option['en']}")
        try:
            answer = read("> " if item.kind != "explain" else "your answer (one line) > ")
            if item.kind == "explain":
                model = (short_answers or {}).get((item.lesson, lang), "")
                write("model answer (the lesson's short answer):\n" + model)
                judged = read("did yours say the same? [y/n] > ").strip().lower()
                verdict = check(item, answer, ranges, lang, self_judged=judged.startswith(("y", "是")))
            else:
                verdict = check(item, answer, ranges, lang)
        except EOFError:
            write("\n(input ended: the rest of the session is skipped)")
            break
        write(verdict.message if item.kind != "explain" else
              f"{'right' if verdict.correct else 'to review'}: {verdict.message}")
        write(f"reread: lesson {item.lesson:02d}, “{item.cell}”")
        recorded.append(record(item, answer, verdict))
    right = sum(1 for e in recorded if e["correct"])
    write(f"\n{right} of {len(recorded)} right. History: {interview_file()}")
    return recorded


def short_answer_texts() -> dict:
    """{(lesson number, "en" or "zh"): the lesson's short answer ("" when it has none)}."""
    found = {}
    for lesson in LESSONS:
        if lesson.number:
            answers = short_answers(lesson.notebook)
            for lang in ("en", "zh"):
                found[(lesson.number, lang)] = answers.get(lang, "")
    return found


def main(lesson: int | None, all_lessons: bool, lang: str, n: int) -> int:
    cards = all_cards()
    if lesson is not None:
        cards = [c for c in cards if c.lesson == lesson]
        if not cards:
            print(f"lesson {lesson:02d}: no interview items")
            return 2
    elif not all_lessons:
        done = lessons_run_so_far()
        chosen = [c for c in cards if c.lesson in done]
        if not chosen:
            print("no lesson run yet (`course run --only NN` or grade an exercise): asking from every lesson")
        cards = chosen or cards
    ranges = claim_ranges()
    # a numeric item whose claim is not in the sweep data cannot be checked: left out (the tests say so)
    items = [item for card in cards for item in card.items
             if item.kind != "numeric" or (f"{item.lesson:02d}", item.claim) in ranges]
    chosen = schedule(items, history(), n=n)
    run_session(chosen, lang=lang, ranges=ranges, short_answers=short_answer_texts())
    return 0


# --- the lesson's "Check yourself" cells ---------------------------------------------------------

QUIZ_CELL_ID = "check-yourself-quiz"
QUIZ_HEADING_ID = "check-yourself"


def quiz_cells(lesson_number: int, notebook_path: Path):
    """The two last cells of a lesson: the heading (markdown) and the quiz (code, with its output
    as running it gives: the HTML quiz and the questions as text)."""
    import nbformat
    from course_lib.quiz import check_yourself
    heading = nbformat.v4.new_markdown_cell(
        "## Check yourself\n\nThe interview question, asked cold: answer before scrolling up. Numeric answers "
        "are checked against this lesson's measured range over the sweep (seeds 0–9 and 2 threads); a wrong "
        "choice says whether it was the usual answer this lesson corrects. The same questions: "
        f"`course interview --lesson {lesson_number:02d}` in a terminal, and the site's mock interview page. "
        "Your answers stay in this browser (`localStorage`).\n\n"
        "## 自测\n\n不看上文，先作答。数值题按本课在各随机种子下的实测范围判分；选择题会指出哪个选项是本课纠正的常见说法。"
        f"终端中也可运行 `course interview --lesson {lesson_number:02d} --lang zh`。")
    heading.id = QUIZ_HEADING_ID
    code = nbformat.v4.new_code_cell(f"from course_lib.quiz import check_yourself\n\ncheck_yourself({lesson_number})")
    code.id = QUIZ_CELL_ID
    shown = check_yourself(lesson_number)
    code.outputs = [nbformat.v4.new_output("execute_result", execution_count=None,
                                           data={"text/html": shown._repr_html_(), "text/plain": repr(shown)})]
    return heading, code


def store_quiz_cells(lesson, path: Path | None = None) -> bool:
    """Put (or refresh) the Check yourself cells at the end of the lesson notebook; True if it changed."""
    import nbformat
    path = Path(path or lesson.notebook)
    nb = nbformat.read(path, as_version=4)
    kept = [cell for cell in nb.cells if cell.get("id") not in (QUIZ_CELL_ID, QUIZ_HEADING_ID)]
    heading, code = quiz_cells(lesson.number, path)
    # an executed cell, numbered after the lesson's last one (nbval refuses outputs on an unrun cell)
    count = max([c.get("execution_count") or 0 for c in kept if c.cell_type == "code"] + [0]) + 1
    code.execution_count = count
    code.outputs[0]["execution_count"] = count
    old = [c for c in nb.cells if c.get("id") in (QUIZ_CELL_ID, QUIZ_HEADING_ID)]
    same = (len(old) == 2 and old[0].source == heading.source and old[1].source == code.source
            and old[1].get("outputs") and old[1].outputs[0].get("data") == code.outputs[0]["data"]
            and old[1].get("execution_count") == count)
    if same:
        return False
    nb.cells = kept + [heading, code]
    nbformat.write(nb, path)
    return True
