"""Every lesson's claims must hold for another seed: execute each with SEED=1 (papermill)."""
import papermill as pm
import pytest

from course_tools.manifest import LESSONS
from course_tools.runner import lesson_status as _status


@pytest.mark.parametrize("lesson", LESSONS, ids=[l.stem for l in LESSONS])
def test_lesson_claims_hold_with_seed_1(lesson, tmp_path):
    output = tmp_path / lesson.notebook.name
    try:
        pm.execute_notebook(str(lesson.notebook), str(output), parameters={"SEED": 1},
                            kernel_name="python3", progress_bar=False, execution_timeout=600,
                            cwd=str(lesson.notebook.parent))
    except pm.PapermillExecutionError:
        pass
    claims, error = _status(output)
    assert claims == "yes", f"{lesson.stem} with SEED=1: claims held = {claims}; {error}"
