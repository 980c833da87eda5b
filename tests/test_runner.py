"""`course run` (the runner behind `make course`): executes a lesson and reads its claims."""
import os

from course_tools.manifest import by_id
from course_tools.runner import kernel_manager_class, run_lessons


def test_run_lessons_executes_and_reports_claims(tmp_path, capfd):
    table = run_lessons([by_id("welcome")], seed=2, out_dir=tmp_path)
    row = table.iloc[0]
    assert row["claims held"] == "yes", row["error"]
    assert (tmp_path / "00_welcome.ipynb").exists()
    assert row["seconds"] > 0
    # IPC sockets on POSIX: no "running over TCP without encryption" warning per lesson
    if os.name != "nt":
        assert kernel_manager_class()().transport == "ipc"
        assert "without encryption" not in capfd.readouterr().err


def test_an_interrupted_run_is_not_run_not_a_crash(tmp_path):
    from course_tools.runner import lesson_status
    empty = tmp_path / "19_cls_vs_pooling__seed7.ipynb"
    empty.write_text("")                      # what a run killed while papermill wrote leaves behind
    status, error = lesson_status(empty)
    assert status.startswith("not run (interrupted") and "NotJSONError" in error
