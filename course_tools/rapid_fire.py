"""The rapid-fire questions: the standard BERT/Transformer interview questions, each with a one-line
answer (at most `ANSWER_WORDS` English words) in English and Chinese.

Each entry of `course_tools/rapid_fire.json` is

    {"q": {"en", "zh"}, "a": {"en", "zh"}, "lesson": NN or null, "cell": heading or null,
     "source": citation or null}

with exactly one of `lesson` (the lesson that measures it, and the "##" heading of the cell to
reread) and `source` (a paper or model card: the question is not measured in this course).

The cheat sheet prints them as its last section ("Rapid fire", 快问快答) and `course interview
--rapid` asks them in random order.
"""
from __future__ import annotations

import json
from pathlib import Path

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
