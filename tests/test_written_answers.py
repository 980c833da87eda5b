"""Written answers: a person grades them with a rubric; the machinery only carries them.

`grading.written` registers an item whose check refuses an empty or one-line answer and shows the
rubric once something is written; `course grade` reports it "to be graded by the instructor" with the
text and the rubric and leaves it out of the automatic score; the class gradebook writes the answers
to `<out>_written.csv` with an empty points column and one empty by-hand column per item in the wide
CSV; Gradescope gets a 0-point test that shows the answer (the rubric once published) and a manual
question to add to the outline. The generator empties the model answer in the exercise."""
from __future__ import annotations

import pytest

from course_tools.lms import exports, feedback, gradescope_run
from course_tools.exercises import strip_source
from course_tools.grader import format_report
from course_tools.grader.authoring import REGISTRY, CheckFailed, load_all, written
from course_tools.grading import run_check

RUBRIC = ("names the cause", "gives the measured effect", "says what fixes it")
ANSWER = ("Unscaled dot products of d_k components have variance d_k, so the softmax saturates and the "
          "gradient reaching the queries vanishes for most of them; dividing by the square root of d_k "
          "keeps the variance at one whatever the width.")


@pytest.fixture
def item():
    load_all()
    ex = written("99.written", points=2, rubric=RUBRIC)
    yield ex
    REGISTRY.pop("99.written", None)


def test_the_check_refuses_an_empty_answer_and_records_a_written_one_for_a_person(item):
    empty = run_check("99.written", "")
    assert not empty.passed and empty.points == 0 and "3-5 sentences" in empty.feedback
    assert not run_check("99.written", 42).passed
    done = run_check("99.written", ANSWER)
    assert done.passed and (done.points, done.max_points) == (0, 2) and "graded by the instructor" in done.feedback


def test_the_notebook_shows_the_rubric_only_after_the_learner_wrote(item, capsys):
    from course_tools.grading import check
    with pytest.raises(CheckFailed):
        check("99.written", "   ")
    assert "names the cause" not in capsys.readouterr().out
    check("99.written", ANSWER)
    shown = capsys.readouterr().out
    assert "RECORDED 99.written" in shown and all(point in shown for point in RUBRIC)


def test_a_rubric_is_required():
    with pytest.raises(ValueError, match="rubric"):
        written("98.written", points=2, rubric=())
    with pytest.raises(ValueError, match="points"):
        written("98.written", points=0, rubric=RUBRIC)


def _report(answer=ANSWER):
    return {"score": 3, "max_score": 3, "manual_max": 2, "items": [
        {"id": "99.auto", "points": 3, "max_points": 3, "passed": True, "feedback": "all cases passed"},
        {"id": "99.written", "points": 0, "max_points": 2, "passed": bool(answer), "manual": True,
         "answer": answer, "rubric": list(RUBRIC),
         "feedback": "to be graded by the instructor" if answer else "to be graded by the instructor; not written yet"}]}


def test_course_grade_reports_the_answer_and_rubric_apart_from_the_score():
    text = format_report(_report(), "me.ipynb")
    assert "score: 3 / 3" in text and "+ 2 points for the written answer, graded by the instructor" in text
    assert ANSWER[:40] in text and all(point in text for point in RUBRIC) and "by hand" in text


def test_the_gradebook_leaves_the_written_answer_to_a_person():
    assert feedback.summarize(_report()) == "the item passed; 99.written: written, graded by hand"
    assert "not written" in feedback.summarize(_report(""))
    row = {"student": "ada", "name": "Ada", "lesson": "99", "file": "a.ipynb", "score": 3, "error": "",
           "written": '[{"id": "99.written", "max_points": 2, "answer": "my words", "rubric": ["x", "y"]}]'}
    (line,) = exports.written_rows([row])
    assert line["points"] == "" and line["max"] == 2 and line["answer"] == "my words" and line["rubric"] == "x | y"


def test_gradescope_shows_the_written_answer_as_a_zero_point_test_for_the_manual_question():
    test = gradescope_run._written_test(_report()["items"][1], "visible")
    assert (test["score"], test["max_score"]) == (0, 0) and ANSWER[:30] in test["output"]
    assert test["visibility"] == "after_published" and test["extra_data"]["points"] == 2
    assert all(point in test["output"] for point in RUBRIC)


def test_the_generator_empties_the_model_answer():
    source = 'written_answer = """\n### BEGIN WRITTEN\nThe model answer.\n### END WRITTEN\n"""'
    stripped, found = strip_source(source)
    assert found and "model answer" not in stripped and stripped.startswith('written_answer = """')
    with pytest.raises(ValueError, match="WRITTEN"):
        strip_source('x = """\n### BEGIN WRITTEN\nno end\n"""')


def test_the_blank_exercise_is_recognised_so_grading_it_leaves_the_learners_score(tmp_path):
    import shutil

    from course_tools.manifest import LESSONS
    from course_tools.workspace import untouched_exercise
    lesson = next(l for l in LESSONS if l.has_exercise and l.number == 1)
    assert untouched_exercise(lesson.exercise, lesson)
    copy = tmp_path / lesson.exercise.name
    shutil.copyfile(lesson.exercise, copy)
    assert not untouched_exercise(copy, lesson)        # a copy elsewhere is the learner's file
