"""Every number in a lesson's English short answer was measured by that lesson: printed in its
stored outputs, inside the range one of its claims took over the sweep, or a constant of its code
(`course_tools.answer_numbers`). A short answer cannot state a number the notebook never showed."""
import nbformat
import pytest

from course_tools.answer_numbers import stated_numbers, unaccounted_numbers
from course_tools.manifest import LESSONS
from course_tools.sweep.results import CLAIMS_CSV, load_claims_csv

LESSONS_WITH_ANSWERS = [lesson for lesson in LESSONS if lesson.number != 0]


@pytest.fixture(scope="module")
def ranges():
    table = load_claims_csv() if CLAIMS_CSV.exists() else None
    found = {}
    for lesson in LESSONS_WITH_ANSWERS:
        key = f"{lesson.number:02d}"
        rows = table[table["lesson"] == key] if table is not None else []
        found[key] = [(row["min"], row["max"]) for _, row in rows.iterrows()] if len(rows) else []
    return found


@pytest.mark.parametrize("lesson", LESSONS_WITH_ANSWERS, ids=[l.stem for l in LESSONS_WITH_ANSWERS])
def test_short_answer_numbers_were_measured(lesson, ranges):
    bad = unaccounted_numbers(lesson.notebook, ranges[f"{lesson.number:02d}"])
    assert not bad, f"{lesson.stem}: numbers the notebook never printed nor swept: " + "; ".join(
        f"{n.text!r} in “{n.sentence[:100]}”" for n in bad)


def _notebook(tmp_path, answer: str, printed: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## The short answer\n\n" + answer),
                nbformat.v4.new_code_cell("steps = 3000\nprint(result)")]
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    path = tmp_path / "lesson.ipynb"
    nbformat.write(nb, path)
    return path


def test_a_number_never_printed_is_caught_and_a_printed_one_passes(tmp_path):
    path = _notebook(tmp_path, "The gap is 0.07–0.12 nats after 3000 steps.", "gap: 0.038\n")
    assert [n.text for n in unaccounted_numbers(path, [])] == ["0.07", "0.12"]
    path = _notebook(tmp_path, "The gap is 0.04 nats after 3000 steps.", "gap: 0.038\n")
    assert unaccounted_numbers(path, []) == []


def test_swept_ranges_percentages_and_citations():
    path_free = stated_numbers("Tied reaches 45 % fewer parameters. Devlin et al. report 84.6 on MNLI.")
    assert [n.text for n in path_free] == ["45 %"]   # the cited sentence is exempt


def test_a_range_inside_a_claims_swept_range_passes(tmp_path):
    path = _notebook(tmp_path, "Untied minus tied: 0.13–0.23 nats.", "seed 0 only: 0.2\n")
    assert [n.text for n in unaccounted_numbers(path, [])] == ["0.13", "0.23"]
    assert unaccounted_numbers(path, [(0.128, 0.231)]) == []
    assert [n.text for n in unaccounted_numbers(path, [(0.14, 0.231)])] == ["0.13"]
