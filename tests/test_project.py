"""The course's structure: manifest, template, exercises, dependencies, the timing table."""
import re
import tomllib

import nbformat
import pytest

from course_lib import ROOT
from course_tools.exercises import generate
from course_tools.manifest import LESSONS

NOTEBOOKS = [l for l in LESSONS]


def _src(cell):
    return cell.source if isinstance(cell.source, str) else "".join(cell.source)


def test_manifest_files_exist():
    for lesson in LESSONS:
        assert lesson.notebook.exists(), lesson.notebook
        if lesson.has_exercise:
            assert lesson.solution.exists(), lesson.solution
            assert lesson.exercise.exists(), lesson.exercise
    assert len({l.id for l in LESSONS}) == len(LESSONS)
    listed = {l.notebook.name for l in LESSONS}
    assert {p.name for p in (ROOT / "notebooks").glob("*.ipynb")} == listed


@pytest.mark.parametrize("lesson", NOTEBOOKS, ids=[l.stem for l in NOTEBOOKS])
def test_lesson_follows_the_template(lesson):
    nb = nbformat.read(lesson.notebook, as_version=4)
    markdown = "\n".join(_src(c) for c in nb.cells if c.cell_type == "markdown")
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert _src(nb.cells[0]).startswith(f"# {lesson.number:02d}"), "title cell first"
    assert re.search(r"[\u4e00-\u9fff]", _src(nb.cells[0])), "the Chinese wording in the title cell"
    for heading in ("## The short answer", "## Pitfalls and follow-ups", "## Exercise", "## References"):
        assert heading in markdown, heading
    params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1 and re.search(r"^SEED = \d+", _src(params[0]), re.M)
    evidence = [c for c in code if "evidence" in c.metadata.get("tags", [])]
    assert evidence and all(re.search(r"\bclaim(_close)?\(|^\s*assert ", _src(c), re.M) for c in evidence), \
        "an evidence cell states its claims (claim(...) or assert)"
    checked = [c for c in code if _src(c).startswith("# NBVAL_CHECK_OUTPUT")]
    assert len(checked) == 1 and checked[0].outputs, "one checked-output cell, stored executed"
    assert not any(o.get("output_type") == "error" for c in code for o in c.outputs)
    assert any(o.get("data", {}).get("image/png") for c in code for o in c.outputs) or lesson.number == 0, \
        "a figure"
    if lesson.has_exercise:
        assert f"exercises/{lesson.stem}.ipynb" in markdown


def test_exercises_are_generated_from_solutions_and_up_to_date():
    assert generate(check_only=True) == [], "run `course exercises`"
    for path in (ROOT / "exercises").glob("*.ipynb"):
        text = path.read_text(encoding="utf-8")
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text and "HIDDEN TESTS" not in text
        nb = nbformat.read(path, as_version=4)
        assert any("answer" in c.metadata.get("tags", []) for c in nb.cells), path.name
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


# environment.yml, requirements.lock and every import against pyproject.toml: tests/test_dependencies.py


def test_the_installed_torch_is_the_exact_version_pinned():
    """torch is pinned exactly (a range pulls a multi-GB CUDA build), and the environment running the
    tests has that version: a stale or hand-upgraded environment fails here, not in a lesson."""
    import torch
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pin = next(d for d in deps if d.replace(" ", "").startswith("torch"))
    assert re.fullmatch(r"torch==\d+\.\d+\.\d+", pin.replace(" ", "")), f"torch is not pinned exactly: {pin!r}"
    assert torch.__version__.split("+")[0] == pin.split("==")[1], \
        f"installed torch {torch.__version__}, pinned {pin}: run `make install`"


def test_the_results_page_has_the_generated_timing_table():
    readme = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    block = readme.split("<!-- timing:begin -->")[1].split("<!-- timing:end -->")[0]
    for lesson in LESSONS:
        assert f"| {lesson.id}" in block.replace("  ", " ") or lesson.id in block, lesson.id
    assert "measured by `make timing`" in block


@pytest.mark.parametrize("lesson", LESSONS, ids=[l.stem for l in LESSONS])
def test_papermill_reads_every_parameter(lesson, caplog):
    """papermill must parse every line of the parameters cell (a comment holding `=` or quotes
    makes it warn "Unable to parse line" in every `make course` and lose that parameter)."""
    from papermill.translators import PythonTranslator
    nb = nbformat.read(lesson.notebook, as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    with caplog.at_level("WARNING", logger="papermill"):
        names = [p.name for p in PythonTranslator.inspect(cell)]
    assert "SEED" in names
    assert not [r.message for r in caplog.records if "Unable to parse" in r.getMessage()], \
        [r.getMessage() for r in caplog.records]


def test_lessons_option_keeps_only_those_lessons_items_and_every_other_test():
    """`pytest --lessons 00,04` (what .ci/as_learner runs as an ordinary user): the tests
    parametrised by lesson run for lessons 00 and 04 only; every other test of the file runs."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "--lessons", "00,04", "tests/test_grading.py", "tests/test_selfcheck.py"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300).stdout
    ids = [line for line in out.splitlines() if "::" in line]
    per_lesson = [i for i in ids if "every_item[" in i or "full_marks[" in i or "solution[" in i]
    assert per_lesson and all(("[00" in i or "[04" in i) for i in per_lesson), per_lesson
    assert len(per_lesson) == 2 + 2 + 2                  # 2 lessons x (untouched, solution, nbval)
    assert any("test_cli_json_output_and_exit_status" in i for i in ids)
    assert any("test_course_check_reports_each_check" in i for i in ids)
