"""Every lesson's claims must hold for another seed: execute each with SEED=1 (papermill)."""
import pytest

from course_tools.manifest import LESSONS
from course_tools.runner import execute_lesson


@pytest.mark.parametrize("lesson", LESSONS, ids=[l.stem for l in LESSONS])
def test_lesson_claims_hold_with_seed_1(lesson, tmp_path):
    _, claims, error = execute_lesson(lesson, tmp_path / lesson.notebook.name, {"SEED": 1}, timeout=600)
    assert claims == "yes", f"{lesson.stem} with SEED=1: claims held = {claims}; {error}"
