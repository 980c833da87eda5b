"""`course progress`: the last score per exercise (from `course grade`) and the lessons run so far."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from course_tools import ROOT, progress
from course_tools.cli import main
from course_tools.manifest import LESSONS


@pytest.fixture
def build(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "BUILD", tmp_path)
    # the grades log (`course_tools.grade_log`, re-exported by progress) in the same folder
    monkeypatch.setenv(progress.GRADES_ENV, str(tmp_path / "grades.jsonl"))
    return tmp_path


def _report(score, max_score, passed, failed):
    items = [{"id": i, "points": 1, "max_points": 1, "passed": True, "feedback": ""} for i in passed]
    items += [{"id": i, "points": 0, "max_points": 1, "passed": False, "feedback": "x"} for i in failed]
    return {"score": score, "max_score": max_score, "items": items}


def test_the_last_grade_per_exercise_wins(build):
    path = ROOT / "exercises" / "01_scale_sqrt_dk.ipynb"
    progress.record(_report(0, 3, [], ["01.a", "01.b", "01.c"]), path)
    progress.record(_report(2, 3, ["01.a", "01.b"], ["01.c"]), path)
    (build / "grades.jsonl").open("a").write('{"truncated')  # an interrupted write is skipped
    row = progress.table().set_index("lesson").loc["01"]
    assert row["last score"] == "2 / 3" and row["to do"] == "01.c"
    assert progress.table().set_index("lesson").loc["02", "last score"] == "not graded"


def test_a_renamed_copy_counts_for_its_lesson_from_metadata_and_solutions_do_not_count(build, tmp_path):
    import shutil
    copy = tmp_path / "work" / "my softmax (1).ipynb"           # renamed: the lesson is in its metadata
    copy.parent.mkdir()
    shutil.copy(ROOT / "exercises" / "00_welcome.ipynb", copy)
    assert progress.record(_report(1, 1, ["00.softmax"], []), copy) is not None
    assert progress.record(_report(1, 1, ["00.softmax"], []), ROOT / "solutions" / "01_scale_sqrt_dk.ipynb") is None
    assert progress.record(_report(0, 1, [], ["00.softmax"]), LESSONS[0].notebook) is None   # not an exercise
    table = progress.table().set_index("lesson")
    assert table.loc["00", "last score"] == "1 / 1" and table.loc["01", "last score"] == "not graded"
    assert table.loc["00", "file graded"] == str(copy)


def test_lines_written_before_the_lesson_was_recorded_still_count(build):
    (build / "grades.jsonl").write_text(json.dumps(
        {"when": "2025-01-01T10:00:00", "exercise": "02_qkv_projections.ipynb", "path": "/x/02_qkv_projections.ipynb",
         "score": 2, "max_score": 4, "passed": ["02.a"], "failed": ["02.b"]}) + "\n")
    assert progress.table().set_index("lesson").loc["02", "last score"] == "2 / 4"


def test_lessons_run_come_from_the_summary_and_the_executed_notebooks(build):
    pd.DataFrame([{"lesson": "03", "id": "multi-head", "seconds": 12.0, "claims held": "yes", "error": ""}]) \
        .to_csv(build / "summary.csv", index=False)
    (build / "notebooks").mkdir()
    (build / "notebooks" / LESSONS[3].notebook.name).write_text("{}")
    table = progress.table().set_index("lesson")
    assert table.loc["03", "claims held"] == "yes" and table.loc["03", "lesson run"] != "not yet"
    assert table.loc["04", "lesson run"] == "not yet"
    assert table.loc["18", "exercise"] == "18_pretrained_parity.ipynb"


def test_a_lesson_without_an_exercise_shows_a_dash(build, monkeypatch):
    import dataclasses
    lessons = [dataclasses.replace(l, has_exercise=False) if l.number == 18 else l for l in progress.LESSONS]
    monkeypatch.setattr(progress, "LESSONS", lessons)
    table = progress.table().set_index("lesson")
    assert table.loc["18", "exercise"] == "-" and table.loc["18", "last score"] == "-"


def test_course_grade_records_and_course_progress_shows_it(build, capsys):
    assert main(["grade", str(ROOT / "exercises" / "00_welcome.ipynb")]) == 0
    entry = json.loads((build / "grades.jsonl").read_text().splitlines()[-1])
    assert entry["exercise"] == "00_welcome.ipynb" and entry["score"] == 0
    assert entry["failed"] == ["00.softmax", "00.masked-softmax", "00.fully-masked"]
    assert entry["lesson"] == "00"
    capsys.readouterr()
    assert main(["progress"]) == 0
    out = capsys.readouterr().out
    assert "| 0 / 3" in out and "exercises graded: 1 / " in out


def test_course_progress_fits_100_columns_when_every_column_is_full(build, capsys, monkeypatch):
    """Every lesson run and graded with items left, long work/ paths, interview scores: no line of
    `course progress` is wider than 100 characters; the items left are listed, none cut off."""
    pd.DataFrame([{"lesson": f"{l.number:02d}", "id": l.id, "seconds": 1234.5, "claims held": "no", "error": ""}
                  for l in LESSONS]).to_csv(build / "summary.csv", index=False)
    (build / "notebooks").mkdir()
    failed = {}
    for lesson in LESSONS:
        (build / "notebooks" / lesson.notebook.name).write_text("{}")
        if lesson.has_exercise:
            failed[lesson.number] = [f"{lesson.number:02d}.item-with-a-long-name-{i}" for i in range(6)]
            copy = ROOT / "work" / f"{lesson.exercise.stem}_exercise (a renamed copy).ipynb"
            progress.record(_report(1, 7, [f"{lesson.number:02d}.a"], failed[lesson.number]), copy,
                            lesson.number)
    monkeypatch.setattr(progress, "interview_scores", lambda: {f"{l.number:02d}": "12/15" for l in LESSONS})
    assert main(["progress"]) == 0
    out = capsys.readouterr().out
    too_wide = [line for line in out.splitlines() if len(line) > 100]
    assert not too_wide, too_wide
    assert "| 1 / 7" in out and "12/15" in out
    joined = " ".join(out.split())
    for items in failed.values():
        assert ", ".join(items) in joined                # every item left, in full (wrapped)
    assert "course progress --csv" in out
