"""Interview practice: each lesson's question asked cold, answers checked against the course's
own measurements, and the items answered wrong brought back sooner.

The items (numeric, choice, explain) and how an answer is checked are `course_lib.quiz`'s: the
same ones the lesson's "Check yourself" cell and the website ask.

`course interview` asks them in the terminal. Each answer is appended to `build/interview.jsonl`
(or `$COURSE_INTERVIEW_FILE`), and the items are scheduled by a Leitner system: an item answered
right moves up a box, wrong goes back to box 1; box k is due again after `BOX_DAYS[k]` days, so an
item answered wrong comes back in the next session and one answered right five times in a month.

`course interview --rapid` asks the rapid-fire questions instead, self-practice with nothing written to
the history: their drill lives with them in `course_tools.rapid_fire`.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
from pathlib import Path

from course_lib.quiz import (BOX_DAYS, WORDS, Card, InterviewError, Item, Verdict,  # noqa: F401
                             accepted_range, check, checkable, choice_index, claim_ranges, load_card, parse_card,
                             parse_number, plain_text, short_answers)

from . import ROOT
from .grade_log import last_grades
from .manifest import LESSONS

INTERVIEW_ENV = "COURSE_INTERVIEW_FILE"


def interview_file() -> Path:
    return Path(os.environ.get(INTERVIEW_ENV) or ROOT / "build" / "interview.jsonl")


# --- the frame in Chinese: the cells to reread and the units -------------------------------------

#: The lessons' common cell headings in Chinese: `--lang zh` names the cell to reread in Chinese (the
#: short answer is the lesson's own `## 中文简答` cell).
HEADINGS_ZH = {"The short answer": "中文简答", "Pitfalls and follow-ups": "常见误区与追问", "Evidence": "证据",
               "Exercise": "练习", "References": "参考文献", "Check yourself": "自测", "The experiment": "实验"}
#: Numbered headings ("Experiment 2: ...", "Build: ..."): their kind in Chinese, and the cell's place.
HEADING_KINDS_ZH = {"Experiment": "实验", "Build": "动手实现"}
#: The units of numeric answers in Chinese (GFLOPs and M stay: symbols, as Chinese texts write them).
UNITS_ZH = {"nats": "奈特", "steps": "步", "std": "个标准差", "heads": "个头", "windows": "个窗口"}


def _cell_numbers(lesson: int) -> dict[str, int]:
    """{heading text: the 1-based number of its cell in the lesson notebook} (the first cell with it)."""
    if lesson in _CELL_NUMBERS:
        return _CELL_NUMBERS[lesson]
    found: dict[str, int] = {}
    notebook = next((l.notebook for l in LESSONS if l.number == lesson), None)
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"] if notebook else []
    except (OSError, ValueError, KeyError):
        cells = []
    for k, cell in enumerate(cells, 1):
        if cell.get("cell_type") != "markdown":
            continue
        source = "".join(cell["source"]) if isinstance(cell.get("source"), list) else str(cell.get("source", ""))
        for line in source.splitlines():
            if line.startswith("#"):
                found.setdefault(_heading(line.lstrip("#")), k)
    _CELL_NUMBERS[lesson] = found
    return found


_CELL_NUMBERS: dict[int, dict[str, int]] = {}


def _heading(text: str) -> str:
    """A heading as the terminal shows it: LaTeX as plain text, no emphasis marks."""
    return plain_text(str(text)).replace("*", "").strip()


def cell_name(lesson: int, heading: str, lang: str = "en") -> str:
    """The lesson cell to reread, named in the learner's language: in English its heading; in Chinese the
    heading's Chinese name ("中文简答", "常见误区与追问"), or its kind and number with the cell's place in the
    notebook ("实验 2（第 9 个单元格）"), or the place alone ("第 12 个单元格") - never the English heading."""
    heading = _heading(heading)
    if lang != "zh":
        return heading
    if heading in HEADINGS_ZH:
        return HEADINGS_ZH[heading]
    place = _cell_numbers(lesson).get(heading)
    match = re.match(r"(Experiment|Build)(?:\s+(\d+))?\s*(?::|$)", heading)
    kind = f"{HEADING_KINDS_ZH[match.group(1)]}{' ' + match.group(2) if match.group(2) else ''}" if match else ""
    if kind and place:
        return f"{kind}（第 {place} 个单元格）"
    if place:
        return f"第 {place} 个单元格"
    return kind or "本课相应小节"


def in_language(item: Item, lang: str) -> Item:
    """`item` as a verdict in `lang` shows it: its unit in Chinese with --lang zh."""
    unit = UNITS_ZH.get(item.unit.strip()) if lang == "zh" else None
    if unit is None:
        return item
    return dataclasses.replace(item, unit=item.unit[:len(item.unit) - len(item.unit.lstrip())] + unit)


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
             n: int | None = None, rng=None) -> list[Item]:
    """The items to ask now: due ones first (never-seen and low boxes first: weakest first), then the
    rest in the same order; at most `n`. Ties are broken by `rng` when given - lessons and kinds
    interleave as in an interview - else by id (numeric items of a lesson first)."""
    now = now or dt.datetime.now()
    state = boxes(entries)
    tie = {item.id: (rng.random() if rng else 0.0, item.id) for item in items}

    def key(item: Item):
        s = state.get(item.id)
        if s is None:
            return (0, 0, 0.0, tie[item.id])                   # never answered: due, weakest
        due = s["due"] <= now
        return (0 if due else 1, s["box"], s["last"].timestamp(), tie[item.id])

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
    done = {int(k) for k in last_grades()}
    executed = ROOT / "build" / "notebooks"
    if executed.exists():
        done |= {int(p.name[:2]) for p in executed.glob("[0-9][0-9]_*.ipynb")}
    return done


def push_back(item: Item, pool: list[Item]) -> Item | None:
    """The interviewer's follow-up after `item`: a choice item of the same lesson with a folklore
    option (the lesson's pitfall: the answer people give), other than `item` itself."""
    return next((other for other in pool if other.lesson == item.lesson and other.id != item.id
                 and other.kind == "choice" and other.folklore is not None), None)


def run_session(items: list[Item], lang: str = "en", read=input, write=print,
                ranges: dict | None = None, model_answers: dict | None = None, rng=None,
                shuffle: bool = True, follow_ups: list[Item] | None = None) -> list[dict]:
    """Ask each item, check, record. Choice options are shown in a fresh order (the right one is not
    always in one place); an answer that is not a number (numeric) or a letter (choice) is asked
    again once, not recorded as wrong. After the first item of a lesson, the interviewer pushes back
    once with that lesson's folklore (`push_back` over `follow_ups`): agree or not, then the reason.
    `model_answers` {(lesson, lang): text} is the model answer of an explain item (the ≤ 40-word
    "say this"; the lesson's short answer is the long one). `read` raises EOFError when the input
    ends (stops early)."""
    import random
    rng = rng or random.Random()
    ranges = claim_ranges() if ranges is None else ranges
    w = WORDS.get(lang, WORDS["en"])
    again = {"en": {"numeric": "type a number (1/16, 6.25% and 0.0625 all work) > ",
                    "choice": "answer with one of the letters > "},
             "zh": {"numeric": "请输入一个数字（1/16、6.25% 与 0.0625 均可）> ", "choice": "请用选项字母作答 > "}}[
        "zh" if lang == "zh" else "en"]
    kinds = {"en": {"numeric": "a number", "choice": "choose one", "explain": "explain"},
             "zh": {"numeric": "数值题", "choice": "选择题", "explain": "简答题"}}["zh" if lang == "zh" else "en"]
    recorded, pushed = [], set()
    for number, item in enumerate(items, 1):
        lesson = f"第 {item.lesson:02d} 课" if lang == "zh" else f"lesson {item.lesson:02d}"
        write(f"\n[{number}/{len(items)}] {lesson} · {kinds.get(item.kind, item.kind)}")
        write(plain_text(item.text("question", lang)))
        order = None
        if item.kind == "choice":
            order = rng.sample(range(len(item.options)), len(item.options)) if shuffle else list(range(len(item.options)))
        if item.kind == "choice":
            for letter, k in zip("abcdefgh", order):
                option = item.options[k]
                write(f"  {letter}) {plain_text(option.get(lang) or option['en'])}")
        try:
            answer = read("> " if item.kind != "explain" else
                          ("用几句话回答（说出要点）> " if lang == "zh" else "your answer (the key points, a few sentences) > "))
            if item.kind == "numeric" and parse_number(answer, item.unit) is None:
                answer = read(again["numeric"])
            elif item.kind == "choice" and choice_index(answer, len(item.options)) is None:
                answer = read(again["choice"])
            if item.kind == "explain":
                model = (model_answers or {}).get((item.lesson, lang), "")
                write(("参考答案：\n" if lang == "zh" else "model answer:\n") + plain_text(model)
                      + (f"\n（完整回答：第 {item.lesson:02d} 课「中文简答」）" if lang == "zh"
                         else f"\n(the long answer: lesson {item.lesson:02d}, \"The short answer\")"))
                judged = read("你的回答是否涵盖了这些要点？[y/n] > " if lang == "zh"
                              else "did yours make the same points? [y/n] > ").strip().lower()
                verdict = check(item, answer, ranges, lang, self_judged=judged.startswith(("y", "是")))
            else:
                verdict = check(in_language(item, lang), answer, ranges, lang, order=order)
        except EOFError:
            write("\n（输入结束：其余题目跳过）" if lang == "zh" else "\n(input ended: the rest of the session is skipped)")
            break
        write(plain_text(verdict.message) if item.kind != "explain" else
              f"{w['right'] if verdict.correct else w['review']}: {plain_text(verdict.message)}")
        write(w["reread"].format(lesson=f"{item.lesson:02d}", cell=cell_name(item.lesson, item.cell, lang)))
        recorded.append(record(item, answer, verdict))
        # never one the session asks anyway: the push-back would give its answer away
        follow = push_back(item, [f for f in follow_ups or [] if f not in items]) if item.lesson not in pushed else None
        if follow is not None:
            pushed.add(item.lesson)
            claim = plain_text(follow.options[follow.folklore].get(lang) or follow.options[follow.folklore]["en"])
            asked = plain_text(follow.text("question", lang))
            try:
                said = read(f"面试官追问：{asked} 有人答「{claim}」。你同意吗？[y/n] > " if lang == "zh"
                            else f"The interviewer pushes back: {asked} Someone answers \"{claim}\" - "
                                 "do you agree? [y/n] > ")
            except EOFError:
                break
            agreed = said.strip().lower().startswith(("y", "是", "同意"))
            right = plain_text(follow.options[follow.answer].get(lang) or follow.options[follow.answer]["en"])
            if lang == "zh":
                write(("不对，这是常见误区。" if agreed else "对，这是常见误区。") + f"更准确的说法：{right}"
                      + f"（{plain_text(follow.text('why', lang))}）")
            else:
                write(("No - that is the folklore. " if agreed else "Right - that is the folklore. ")
                      + f"Closer to the truth: {right} ({plain_text(follow.text('why', lang))})")
    right = sum(1 for e in recorded if e["correct"])
    write(f"\n答对 {right} / {len(recorded)}。记录：{interview_file()}" if lang == "zh"
          else f"\n{right} of {len(recorded)} right. History: {interview_file()}")
    return recorded


def main(lesson: int | None, all_lessons: bool, lang: str, n: int, in_order: bool = False) -> int:
    cards = all_cards()
    if lesson is not None:
        cards = [c for c in cards if c.lesson == lesson]
        if not cards:
            print(f"第 {lesson:02d} 课没有面试题" if lang == "zh" else f"lesson {lesson:02d}: no interview items")
            return 2
    elif not all_lessons:
        done = lessons_run_so_far()
        chosen = [c for c in cards if c.lesson in done]
        if not chosen:
            print("还没有运行过任何一课（`course run --only NN` 或为练习评分）：从所有课程中出题" if lang == "zh" else
                  "no lesson run yet (`course run --only NN` or grade an exercise): asking from every lesson")
        cards = chosen or cards
    ranges = claim_ranges()
    # a numeric item whose claim is not in the sweep data cannot be checked: left out (the tests say so)
    items = [item for card in cards for item in card.items if checkable(item, ranges)]
    import random
    chosen = schedule(items, history(), n=n, rng=None if in_order else random.Random())
    say_this = {(card.lesson, l): card.say_this.get(l, "") for card in cards for l in ("en", "zh")}
    run_session(chosen, lang=lang, ranges=ranges, model_answers=say_this, shuffle=not in_order,
                follow_ups=items)
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
