"""Every lesson, executed once under nbval (`pytest --nbval-lax notebooks/NN_*.ipynb` does the same
for one lesson): no cell may raise - so every `claim(...)` holds at the lesson's seed - and every
`# NBVAL_CHECK_OUTPUT` cell prints what the stored notebook shows.

Two pytest processes share the lessons (the slowest first); the lessons that use the tiny
pretrained BERT run one after another in one process, so it is pretrained once (about 2 minutes,
then cached in build/cache). Other seeds and the 2-thread run are the sweep's job (`make sweep`).
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from course_tools import selfcheck
from course_tools.manifest import LESSONS

pytestmark = pytest.mark.notebooks
# lessons whose first run pretrains the tiny BERT (course_lib.pretraining): kept in one process
TINY_BERT = ("16_", "17_", "19_")


def _jobs(lessons):
    together = [l.notebook for l in lessons if l.stem.startswith(TINY_BERT)]
    alone = [[l.notebook] for l in lessons if not l.stem.startswith(TINY_BERT)]
    return ([together] if together else []) + alone


@pytest.fixture(scope="module")
def results(selected_lessons):
    lessons = [lesson for lesson in LESSONS if lesson.stem in selected_lessons]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as pool:
        parts = list(pool.map(lambda paths: selfcheck.run(paths, timeout=1800), _jobs(lessons)))
    print(f"\nnbval over {len(lessons)} lessons: {time.perf_counter() - start:.0f} s")
    return {path: result for part in parts for path, result in part.items()}


@pytest.mark.parametrize("lesson", LESSONS, ids=[l.stem for l in LESSONS])
def test_lesson_runs_and_its_checked_outputs_match(lesson, results):
    result = results[lesson.notebook.resolve()]
    failed = [f"cell {c.cell}: {c.message}" for c in result.failed_cells]
    assert result.passed, f"{lesson.stem}: " + ("; ".join(failed) or result.output[-3000:])
