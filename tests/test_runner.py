"""`course run` (the runner behind `make course`): executes a lesson and reads its claims."""
import os

from course_tools.manifest import by_id
from course_tools.runner import kernel_manager_class, run_lessons


def test_run_lessons_executes_and_reports_claims(tmp_path, capfd):
    # two at a time (`course run`'s default on 2 cores), each in a worker process: rows in lesson order
    table = run_lessons([by_id("welcome"), by_id("scale-sqrt-dk")], seed=2, out_dir=tmp_path, jobs=2)
    assert table["lesson"].tolist() == ["00", "01"]
    for _, row in table.iterrows():
        assert row["claims held"] == "yes", row["error"]
        assert row["seconds"] > 0
    assert (tmp_path / "00_welcome.ipynb").exists() and (tmp_path / "01_scale_sqrt_dk.ipynb").exists()
    # IPC sockets on POSIX: no "running over TCP without encryption" warning per lesson
    if os.name != "nt":
        assert kernel_manager_class()().transport == "ipc"
        assert "without encryption" not in capfd.readouterr().err


def test_an_interrupted_run_is_not_run_not_a_crash(tmp_path):
    import nbformat

    from course_tools.runner import INTERRUPTED, lesson_status
    empty = tmp_path / "19_cls_vs_pooling__seed7.ipynb"
    empty.write_text("")                      # what a run killed while papermill wrote leaves behind
    status, error = lesson_status(empty)
    assert status == INTERRUPTED and "NotJSONError" in error
    # readable, but stopped with no failing cell: the cells after the kill never ran
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1", execution_count=1),
                                         nbformat.v4.new_code_cell("y = 2")])
    stopped = tmp_path / "11_encoder_decoder__seed5.ipynb"
    nbformat.write(nb, stopped)
    assert lesson_status(stopped) == (INTERRUPTED, "1 code cells never ran")
    nb.cells[1].execution_count = 2
    nbformat.write(nb, stopped)
    assert lesson_status(stopped) == ("no claims", "")


def test_parallel_jobs_start_longest_first_and_the_pretraining_lessons_share_one(monkeypatch):
    from course_tools import runner
    from course_tools.manifest import LESSONS
    seconds = {"00": 5.0, "03": 30.0, "09": 40.0, "16": 50.0, "17": 10.0, "25": 70.0}
    monkeypatch.setattr(runner, "expected_seconds", lambda lesson: seconds[f"{lesson.number:02d}"])
    lessons = [l for l in LESSONS if f"{l.number:02d}" in seconds]
    order = [[f"{l.number:02d}" for l in group] for group in runner.job_groups(lessons)]
    assert order == [["25"], ["16", "17"], ["09"], ["03"], ["00"]]   # 16 + 17: one job of 60 s
    # without a ledger every lesson counts 0 s: the jobs keep the lessons' own order
    monkeypatch.setattr(runner, "expected_seconds", lambda lesson: 0.0)
    assert [[l.number for l in g] for g in runner.job_groups(lessons)][0] == [16, 17]
