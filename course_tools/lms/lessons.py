"""A lesson as the gradebook names it: its title ("01 scale-sqrt-dk"), the points its exercise is
worth (`lesson_max`, from the official notebook and the checks' registry) and its written items,
graded by hand (`lesson_written`). Lessons are two-digit strings here, as in the CSV files."""
from __future__ import annotations

import json

from ..grader import official_items


def lesson_title(number: str) -> str:
    """"01" -> "01 scale-sqrt-dk"; a number no lesson has is its own title."""
    from ..manifest import LESSONS
    lesson = next((l for l in LESSONS if f"{l.number:02d}" == number), None)
    return f"{number} {lesson.id}" if lesson else number


def lesson_max(number: str) -> int | None:
    """The points an exercise is worth, from its official notebook and the checks' registry."""
    from ..grader import rebuild, validate
    from ..grader.authoring import load_all
    from ..manifest import LESSONS
    lesson = next((l for l in LESSONS if f"{l.number:02d}" == number and l.has_exercise), None)
    if lesson is None or not lesson.exercise.exists():
        return None
    nb = validate(json.loads(lesson.exercise.read_text(encoding="utf-8")))
    registry = load_all()
    return sum(registry[s["id"]].points for s in rebuild(nb, nb)
               if s["kind"] == "grade" and s["id"] in registry and not registry[s["id"]].manual)


def lesson_written(number: str) -> list[tuple[str, int]]:
    """The lesson's manually graded items: (id, points)."""
    try:
        return [(i["id"], i["max_points"]) for i in official_items(int(number)) if i.get("manual")]
    except (StopIteration, OSError, ValueError):
        return []
