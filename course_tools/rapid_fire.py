"""The rapid-fire questions: the standard BERT/Transformer interview questions, each with a one-line
answer (at most `ANSWER_WORDS` English words) in English and Chinese.

Each entry of `course_tools/rapid_fire.json` is

    {"q": {"en", "zh"}, "a": {"en", "zh"}, "lesson": NN or null, "cell": heading or null,
     "source": citation or null}

with exactly one of `lesson` (the lesson that measures it, and the "##" heading of the cell to
reread) and `source` (a paper or model card: the question is not measured in this course).

The cheat sheet prints them as its last section ("Rapid fire", 快问快答) and `course interview
--rapid` asks them in random order (`rapid_main`, below): the learner answers, sees the one-line answer
and where the course measures it, and says whether theirs said the same. Rapid fire is self-practice:
nothing is written to the interview's history.
"""
from __future__ import annotations

import json
from pathlib import Path

from course_lib.quiz import plain_text

RAPID_FIRE_JSON = Path(__file__).with_name("rapid_fire.json")
ANSWER_WORDS = 25


def _text(entry: dict, key: str, where: str) -> dict:
    value = entry.get(key)
    if not (isinstance(value, dict) and all(isinstance(value.get(l), str) and value[l].strip()
                                            for l in ("en", "zh"))):
        raise ValueError(f"{where}: {key}: expected {{'en': text, 'zh': text}}, both non-empty")
    return value


def validate(entries) -> list[dict]:
    """`entries` checked for shape; raises ValueError naming the first bad entry."""
    if not isinstance(entries, list):
        raise ValueError("rapid fire: expected a list of entries")
    for k, entry in enumerate(entries):
        where = f"rapid fire entry {k}"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: expected an object")
        _text(entry, "q", where)
        _text(entry, "a", where)
        lesson, cell, source = entry.get("lesson"), entry.get("cell"), entry.get("source")
        if (lesson is None) == (source is None):
            raise ValueError(f"{where}: expected exactly one of lesson and source")
        if lesson is not None and not (isinstance(lesson, int) and isinstance(cell, str) and cell.strip()):
            raise ValueError(f"{where}: a lesson needs its number and the heading of the cell to reread")
        if source is not None and not (isinstance(source, str) and source.strip() and cell is None):
            raise ValueError(f"{where}: source: expected a citation (and no cell)")
    return entries


def load(path: Path | None = None) -> list[dict]:
    """The rapid-fire entries, in their stored order."""
    path = RAPID_FIRE_JSON if path is None else Path(path)
    return validate(json.loads(path.read_text(encoding="utf-8")))


# --- the drill: `course interview --rapid` ---------------------------------------------------------

#: What `rapid_session` says, per language (Chinese throughout with --lang zh).
RAPID_WORDS = {
    "en": {"header": "[{k}/{n}] rapid fire", "answer": "your answer (one line) > ", "model": "one-line answer: {a}",
           "where": "measured in lesson {n}, “{cell}”", "source": "not measured in this course: {source}",
           "same": "did yours say the same? [y/n] > ", "ended": "(input ended: the rest of the session is skipped)",
           "total": "{same} of {asked} the same (rapid fire is not recorded in the interview history)"},
    "zh": {"header": "[{k}/{n}] 快问快答", "answer": "一句话作答 > ", "model": "参考答案：{a}",
           "where": "实测见第 {n} 课，“{cell}”", "source": "本课程未实测：{source}",
           "same": "你的回答意思相同吗？[y/n] > ", "ended": "（输入结束：其余题目跳过）",
           "total": "意思相同 {same} / {asked}（快问快答不计入复习记录）"},
}


def rapid_where(entry: dict, lang: str) -> str:
    """Where the course measures `entry`, or the paper it comes from, as one terminal line."""
    from .interview import cell_name
    w = RAPID_WORDS[lang]
    if entry["lesson"] is not None:
        return w["where"].format(n=f"{entry['lesson']:02d}",
                                 cell=cell_name(entry["lesson"], plain_text(entry["cell"]).replace("*", ""), lang))
    return w["source"].format(source=entry["source"].replace("`", ""))


def rapid_session(entries: list[dict], lang: str = "en", read=input, write=print) -> list[bool]:
    """Ask each entry's question, show its one-line answer and where it is measured, and ask whether
    the learner's answer said the same. Returns the self-judgements; `read` raises EOFError when
    the input ends (stops early). Nothing is recorded."""
    lang = "zh" if lang == "zh" else "en"
    w = RAPID_WORDS[lang]
    judged = []
    for k, entry in enumerate(entries, 1):
        write(f"\n{w['header'].format(k=k, n=len(entries))}")
        write(plain_text(entry["q"][lang]))
        try:
            read(w["answer"])
            write(w["model"].format(a=plain_text(entry["a"][lang])))
            write(rapid_where(entry, lang))
            said = read(w["same"])
        except EOFError:
            write("\n" + w["ended"])
            break
        judged.append(said.strip().lower().startswith(("y", "是", "对")))
    write("\n" + w["total"].format(same=sum(judged), asked=len(judged)))
    return judged


def rapid_main(lang: str, n: int, lesson: int | None = None, rng=None) -> int:
    """`course interview --rapid`: `n` rapid-fire questions in random order (only `lesson`'s if given)."""
    import random
    entries = [e for e in load() if lesson is None or e["lesson"] == lesson]
    if not entries:
        print(f"第 {lesson:02d} 课没有快问快答题目" if lang == "zh" else f"lesson {lesson:02d}: no rapid-fire questions")
        return 2
    rng = rng or random.Random()
    rapid_session(rng.sample(entries, min(n, len(entries)) if n > 0 else len(entries)), lang=lang)
    return 0
