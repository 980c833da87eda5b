"""The exercises' corpora: for each lesson, plausible wrong answers and honest alternatives.

`tests/corpus/lessonNN.py` defines

    MISTAKES = [Mistake("NN.item-id", "short-name", {0: "source of answer cell 0"}, "words")]
    HONEST = [Honest("short-name", {0: "source of answer cell 0", 1: "..."})]

The dict maps the index of an answer cell (0 = the exercise's first cell tagged `answer`) to the
source that replaces it; answer cells not named keep the official solution's source. A mistake must
score 0 on its item, with feedback containing `words` (case-insensitive; the failed case, what was
expected, the hint); an honest variant must score full marks on every item. tests/test_corpus.py
checks both, in the notebook's way (`course_tools.grading.run_check`, what `check(...)` and
`course check` run) and through the sandboxed grader (`course grade`) for a sample.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mistake:
    item: str
    name: str
    answers: dict
    words: str = ""


@dataclass(frozen=True)
class Honest:
    name: str
    answers: dict
