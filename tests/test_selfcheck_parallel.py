"""`course check`'s parallel runner around jupyter_client's port race: two kernels launched in the same
instant can pick the same port, and one dies before it answers (jupyter_client issue #154). The
workers start 2 s apart, and a notebook whose kernel never started is run once more."""
from pathlib import Path

from course_tools import selfcheck
from course_tools.selfcheck import CellResult, NotebookResult


def test_a_notebook_whose_kernel_never_started_is_run_again(monkeypatch):
    calls = []

    def fake_run(paths, timeout=900):
        calls.append(list(paths))
        out = {}
        for p in paths:
            died = p.name == "a.ipynb" and sum(p in c for c in calls) == 1
            message = "E   RuntimeError: " + selfcheck.KERNEL_NEVER_STARTED if died else ""
            out[p] = NotebookResult(p, [CellResult(0, "failed" if died else "passed", [], message)], code_cells=1)
        return out

    monkeypatch.setattr(selfcheck, "run", fake_run)
    monkeypatch.setattr(selfcheck.time, "sleep", lambda s: None)
    a, b = Path("/x/a.ipynb").resolve(), Path("/x/b.ipynb").resolve()
    results = selfcheck.run_parallel([a, b], workers=2)
    assert results[a].passed and results[b].passed
    assert sorted(map(len, calls)) == [1, 1, 1] and calls.count([a]) == 2   # a once more, b once
