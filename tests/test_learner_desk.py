"""The learner's desk (issue 18): a workspace that is the learner's, commands where they are typed.

A scripted learner session starts the warm-up exercise 00 (`course start 00` copies it into work/), answers it,
regenerates the exercises, self-checks, grades and reads `course progress`: the answer survives,
progress counts a renamed copy by its lesson, and grading the lesson notebook changes nothing.
The work folder and the grades file are temporary (COURSE_WORK_DIR, COURSE_GRADES_FILE): the
checkout is left as it was. The other tests are unit tests (no notebook run, nothing graded).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

from course_tools import ROOT, cli, commands, exercises, lab, progress, runner, selfcheck, workspace
from course_tools.manifest import LESSONS
from tests.exercise00 import ANSWER as ANSWER00, EXERCISE as EXERCISE00

LESSON = LESSONS[1]                      # 01 scale-sqrt-dk
EXERCISE = ROOT / "exercises" / "01_scale_sqrt_dk.ipynb"
SOLUTION = ROOT / "solutions" / "01_scale_sqrt_dk.ipynb"


def solution_answer() -> str:
    """The official answer of exercise 01, as a learner would type it (no solution markers)."""
    nb = nbformat.read(SOLUTION, as_version=4)
    source = next(c.source for c in nb.cells if "### BEGIN SOLUTION" in c.source)
    return "\n".join(l for l in source.splitlines() if "SOLUTION" not in l)


WARM_UP = LESSONS[0]                     # 00 welcome: the grader tests' fixture (tests/exercise00.py)
WARM_UP_EXERCISE = EXERCISE00
WARM_UP_ANSWER = "\n".join(l for l in ANSWER00.splitlines() if "SOLUTION" not in l)   # as typed


def write_answer(path: Path, answer: str) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if "answer" in cell.metadata.get("tags", []):
            cell.source = answer
    nbformat.write(nb, path)


@pytest.fixture
def desk(tmp_path, monkeypatch):
    """A temporary work/ folder and grades file; nothing of the checkout is written."""
    monkeypatch.setenv(workspace.WORK_ENV, str(tmp_path / "work"))
    monkeypatch.setenv(progress.GRADES_ENV, str(tmp_path / "grades.jsonl"))
    monkeypatch.setattr(progress, "BUILD", tmp_path / "build")
    return tmp_path


# ------------------------------------------------------------------ the scripted session

def test_a_learner_session_start_answer_regenerate_check_grade_progress(desk, capsys, monkeypatch):
    # start: a copy in work/, and the way to open it
    assert cli.main(["start", "0"]) == 0
    out = capsys.readouterr().out
    work = desk / "work" / "00_welcome_exercise.ipynb"   # not the lesson's name: two tabs, two titles
    assert work == workspace.work_copy(WARM_UP) and work.name != WARM_UP.notebook.name
    copied, exercise = nbformat.read(work, as_version=4), nbformat.read(WARM_UP_EXERCISE, as_version=4)
    assert [(c.cell_type, c.source) for c in copied.cells] == [(c.cell_type, c.source) for c in exercise.cells]
    assert copied.metadata.course == exercise.metadata.course
    assert copied.metadata.kernelspec["display_name"] == lab.KERNEL_DISPLAY_NAME   # opens unmodified
    assert workspace.display(work) in out
    assert "course lab" in out and "course check 00" in out and "course grade 00" in out

    # answer it (in the work copy), then regenerate the exercises: the answer survives, and an edit
    # made in (a copy of) exercises/ itself survives too, with the learner's extra notebook
    write_answer(work, WARM_UP_ANSWER)
    answered = work.read_bytes()
    generated = desk / "exercises"
    shutil.copytree(ROOT / "exercises", generated)
    write_answer(generated / WARM_UP_EXERCISE.name, WARM_UP_ANSWER)
    edited = (generated / WARM_UP_EXERCISE.name).read_bytes()
    (generated / "my notes.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    real_sync = exercises.sync
    monkeypatch.setattr(exercises, "sync", lambda **kw: real_sync(exercises_dir=generated, **kw))
    assert cli.main(["exercises"]) == 1                   # refuses, names the file, offers --force
    err = capsys.readouterr().err
    assert f"kept exercises/{WARM_UP_EXERCISE.name}" in err and "--force" in err
    assert work.read_bytes() == answered
    assert (generated / WARM_UP_EXERCISE.name).read_bytes() == edited
    assert (generated / "my notes.ipynb").exists()
    assert cli.main(["start", "00"]) == 0                 # an existing copy is never replaced
    assert work.read_bytes() == answered

    # self-check (nbval) of the work copy, by lesson number
    assert cli.main(["check", "00"]) == 0
    out = capsys.readouterr().out
    n = sum(len(selfcheck.GRADE_CALL.findall(c.source)) for c in nbformat.read(WARM_UP_EXERCISE, as_version=4).cells)
    assert str(work) in out and out.count("PASS  00.") == n and f"checks passed: {n} / {n}" in out

    # progress: keyed by the lesson in the metadata, so a renamed copy counts too (here: untouched)
    renamed = desk / "elsewhere" / "my attempt (1).ipynb"
    renamed.parent.mkdir()
    shutil.copy(WARM_UP_EXERCISE, renamed)
    assert cli.main(["grade", str(renamed)]) == 0
    full = re.search(r"score: 0 / (\d+)", capsys.readouterr().out).group(1)
    row = progress.table().set_index("lesson").loc["00"]
    assert row["last score"] == f"0 / {full}" and row["file graded"] == str(renamed.resolve())

    # grade, by lesson number: the work copy, with full marks
    assert cli.main(["grade", "00"]) == 0
    out = capsys.readouterr().out
    assert str(work) in out and f"score: {full} / {full}" in out
    row = progress.table().set_index("lesson").loc["00"]
    assert row["last score"] == f"{full} / {full}" and row["to do"] == ""

    # grading the lesson notebook is refused and changes nothing
    grades = (desk / "grades.jsonl").read_bytes()
    assert cli.main(["grade", str(WARM_UP.notebook)]) == 2
    err = capsys.readouterr().err
    assert "not an exercise" in err and "course start 00" in err
    assert (desk / "grades.jsonl").read_bytes() == grades
    assert cli.main(["progress"]) == 0
    assert f"| {full} / {full}" in capsys.readouterr().out


# ------------------------------------------------------------------ exercises never clobber edits

def _solutions(tmp_path, n=2) -> Path:
    folder = tmp_path / "solutions"
    folder.mkdir()
    for lesson in LESSONS[:n]:
        shutil.copy(lesson.solution, folder)
    return folder


@pytest.mark.unit
def test_regenerating_keeps_an_edited_exercise_and_force_backs_it_up(tmp_path):
    solutions, generated, backups = _solutions(tmp_path), tmp_path / "exercises", tmp_path / "backups"
    report = exercises.sync(solutions, generated)
    assert sorted(report.written) == ["00_welcome.ipynb", "01_scale_sqrt_dk.ipynb"]
    target = generated / "01_scale_sqrt_dk.ipynb"
    pristine = target.read_text()
    assert exercises.is_generated(target)
    write_answer(target, "def scaled_dot_product_attention(q, k, v, mask=None):\n    return 'mine'\n")
    edited = target.read_text()
    (generated / "extra.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    assert not exercises.is_generated(target)

    (solutions / "00_welcome.ipynb").write_text((solutions / "00_welcome.ipynb").read_text()
                                                 .replace("numerically stable", "numerically safe"))
    report = exercises.sync(solutions, generated, backup_dir=backups)
    assert report.written == ["00_welcome.ipynb"] and report.kept == ["01_scale_sqrt_dk.ipynb"]
    assert report.extra == ["extra.ipynb"] and target.read_text() == edited
    assert (generated / "extra.ipynb").exists() and not backups.exists()
    assert exercises.sync(solutions, generated, check_only=True).kept == ["01_scale_sqrt_dk.ipynb"]

    report = exercises.sync(solutions, generated, force=True, backup_dir=backups)
    assert report.written == ["01_scale_sqrt_dk.ipynb"] and target.read_text() == pristine
    assert [p.read_text() for p in report.backups] == [edited] and report.backups[0].parent == backups
    assert (generated / "extra.ipynb").exists()         # --force never deletes a learner's notebook


@pytest.mark.unit
def test_solutions_and_exercises_say_which_lesson_they_are_and_exercises_carry_their_hash():
    for lesson in [l for l in LESSONS if l.has_exercise]:
        assert nbformat.read(lesson.solution, as_version=4).metadata["course"]["lesson"] == lesson.number
        meta = nbformat.read(lesson.exercise, as_version=4).metadata["course"]
        assert meta["lesson"] == lesson.number and exercises.is_generated(lesson.exercise), lesson.stem


@pytest.mark.unit
def test_outputs_alone_are_not_an_edit_and_a_generated_orphan_is_removed(tmp_path):
    solutions, generated = _solutions(tmp_path), tmp_path / "exercises"
    exercises.sync(solutions, generated)
    target = generated / "01_scale_sqrt_dk.ipynb"
    nb = nbformat.read(target, as_version=4)
    nb.cells[4].outputs = [nbformat.v4.new_output("stream", text="PASSED")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, target)
    assert exercises.is_generated(target)
    (solutions / "00_welcome.ipynb").unlink()
    report = exercises.sync(solutions, generated)
    assert report.removed == ["00_welcome.ipynb"] and report.written == ["01_scale_sqrt_dk.ipynb"]
    assert exercises.sync(solutions, generated, check_only=True).stale == []


# ------------------------------------------------------------------ commands where they are typed

@pytest.mark.unit
def test_lab_server_has_the_environment_bin_first_on_path_and_plain_shell_terminals(monkeypatch):
    monkeypatch.setenv("PATH", os.pathsep.join(["/usr/bin", str(lab.bin_dir()), "/bin"]))
    env = lab.environment()
    entries = env["PATH"].split(os.pathsep)
    assert entries[0] == str(Path(sys.executable).parent) and (Path(entries[0]) / "course").exists()
    assert entries.count(entries[0]) == 1 and "/usr/bin" in entries
    setting = next(a for a in lab.command() if a.startswith("--ServerApp.terminado_settings="))
    shell = json.loads(setting.split("=", 1)[1])["shell_command"]
    assert "-l" not in shell and "--login" not in shell   # a login shell would reset PATH


@pytest.mark.unit
def test_course_lab_passes_unknown_arguments_to_jupyterlab(monkeypatch, desk):
    calls = []
    monkeypatch.setattr(lab, "configure", lambda *a, **k: [])
    monkeypatch.setattr(commands.subprocess, "call", lambda cmd, **kw: calls.append((cmd, kw)) or 0)
    assert cli.main(["lab", "--port", "8899"]) == 0
    cmd, kw = calls[-1]
    assert cmd[-2:] == ["--port", "8899"] and kw["env"]["PATH"].startswith(str(lab.bin_dir()))
    assert cli.main(["lab", "--", "--no-browser"]) == 0
    assert calls[-1][0][-1] == "--no-browser" and "--" not in calls[-1][0]
    assert cli.main(["lab", str(LESSON.notebook), "--no-browser"]) == 0
    urls = [a for a in calls[-1][0] if a.startswith("--LabApp.default_url=")]
    assert urls == [f"--LabApp.default_url=/lab/tree/notebooks/{LESSON.notebook.name}"]
    with pytest.raises(SystemExit):
        cli.main(["list", "--port", "1"])                # other commands still refuse unknown options


@pytest.mark.unit
def test_grade_and_check_take_a_number_or_any_path_and_suggest_the_nearest(tmp_path, desk, capsys):
    assert workspace.resolve("1") == EXERCISE and workspace.resolve("scale-sqrt-dk") == EXERCISE
    spaced = tmp_path / "a folder" / "my copy (1).ipynb"
    spaced.parent.mkdir()
    shutil.copy(EXERCISE, spaced)
    assert workspace.resolve(str(spaced)) == spaced
    workspace.start("01")
    assert workspace.resolve("01") == workspace.work_copy(LESSON)      # the learner's copy wins
    with pytest.raises(workspace.NotebookNotFound, match=r"did you mean exercises/01_scale_sqrt_dk\.ipynb"):
        workspace.resolve("exercises/01_scale_sqrt.ipynb")
    with pytest.raises(workspace.NotebookNotFound, match="00-25"):
        workspace.resolve("99")
    assert cli.main(["grade", "exercises/01_scale_sqrt.ipynb"]) == 2
    assert "did you mean exercises/01_scale_sqrt_dk.ipynb?" in capsys.readouterr().err
    assert cli.main(["check", "notebooks/01_scale_sqrt.ipynb"]) == 2
    assert "did you mean notebooks/01_scale_sqrt_dk.ipynb?" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="no lesson '99'; the lessons are 00-25"):
        cli.main(["run", "--only", "99"])


@pytest.mark.unit
def test_a_copy_started_under_the_lessons_own_name_is_still_the_learners(desk, capsys):
    """Copies made before `course start` named them `..._exercise.ipynb` keep their answers: start,
    check and grade find them, and no second copy is made."""
    legacy = desk / "work" / EXERCISE.name
    legacy.parent.mkdir()
    shutil.copy(EXERCISE, legacy)
    assert workspace.start("01") == (legacy, False)
    assert not workspace.work_copy(LESSON).exists()
    assert workspace.resolve("01") == legacy == workspace.started_copy(LESSON)
    assert cli.main(["start", "01"]) == 0
    assert "already started" in capsys.readouterr().out


@pytest.mark.unit
def test_course_run_names_the_running_lesson_and_announces_the_pretraining(tmp_path, monkeypatch, capsys):
    from course_lib import pretraining
    monkeypatch.setattr(runner, "execute_lesson", lambda *a, **k: (0.0, "yes", ""))
    cache = tmp_path / "cache"
    monkeypatch.setattr(pretraining, "cache_path", lambda config, seed, *a, **k: cache / f"{config.task}-{seed}.pt")
    assert runner.pretraining_note(LESSONS[15]) == ""                       # 15 needs no tiny BERT
    assert "pretraining the tiny BERT once (~2 min" in runner.pretraining_note(LESSONS[16])
    runner.run_lessons([LESSONS[15], LESSONS[16]], out_dir=tmp_path / "out")
    err = capsys.readouterr().err
    assert "running 15 mlm-masking" in err and "running 16 nsp-vs-sop" in err
    assert "lesson 16 (nsp-vs-sop): pretraining the tiny BERT once (~2 min" in err
    cache.mkdir()
    (cache / "nsp-0.pt").write_bytes(b"")                                  # cached: nothing to say
    assert runner.pretraining_note(LESSONS[17]) == ""


# ------------------------------------------------------------------ one verdict, printed once

@pytest.mark.unit
def test_check_prints_one_line_and_fails_with_one_short_message(capsys):
    from course_tools.grading import CheckFailed, check

    def softmax(x):
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True)
    assert check("00.softmax", softmax) is None                           # no Result(...) to echo
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("PASSED 00.softmax (1/1)")

    with pytest.raises(CheckFailed) as failure:
        check("00.softmax", lambda x: x.exp())
    assert capsys.readouterr().out == ""                                 # not printed, then raised
    shown = failure.value._render_traceback_()                          # what IPython shows instead
    assert len(shown) == 1 and "\n" not in shown[0]
    assert "FAILED" in shown[0] and "00.softmax (0/1)" in shown[0]
    assert "got" in shown[0] and "expected" in shown[0]
