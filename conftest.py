"""Repository-wide pytest set-up (the notebook kernels that nbval and papermill start inherit it).

Markers (`pytest -m unit` runs in under a minute; CONTRIBUTING.md):
- unit: the library and the tools, no notebook executed, nothing graded;
- notebooks: executes lessons or exercises (nbval, papermill);
- grader: grades notebooks in the sandbox (the grader, the self-check's verdicts, progress);
- browser: the site and JupyterLab in Chromium (browser_tests/, `make test-browser`).
A test file may set `pytestmark` itself; otherwise its marker comes from MARKERS below.
"""
import os
import tempfile

import pytest

os.environ.setdefault("TQDM_MININTERVAL", "3600")  # one bar update per loop: stable outputs
# One BLAS/OpenMP thread: the course's models are tiny, a second thread only adds synchronisation,
# and results are bit-identical run to run only at a fixed thread count.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Caches that Jupyter, IPython, matplotlib and Hugging Face would write under $HOME go to one
# folder in the system temp instead: `make test` changes nothing outside the checkout and /tmp.
_SCRATCH = os.path.join(tempfile.gettempdir(), f"course-tests-{os.getuid() if hasattr(os, 'getuid') else 0}")
for _name, _sub in (("XDG_CACHE_HOME", "cache"), ("MPLCONFIGDIR", "matplotlib"), ("IPYTHONDIR", "ipython"),
                    ("JUPYTER_RUNTIME_DIR", "jupyter-runtime")):
    if _name not in os.environ:
        os.makedirs(os.path.join(_SCRATCH, _sub), mode=0o700, exist_ok=True)
        os.environ[_name] = os.path.join(_SCRATCH, _sub)

MARKERS = {
    "unit": "the library and the tools: no notebook executed, nothing graded (under a minute)",
    "notebooks": "executes lessons or exercises (nbval, papermill)",
    "grader": "grades notebooks in the sandbox: grader, self-check verdicts, progress",
    "browser": "the site and JupyterLab in Chromium (make test-browser)",
}
BY_FILE = {
    "test_lessons.py": "notebooks", "test_runner.py": "notebooks", "test_selfcheck.py": "grader",
    "test_grading.py": "grader", "test_grader_attacks.py": "grader", "test_grader_class.py": "grader",
    "test_progress.py": "grader", "test_learner_desk.py": "grader", "test_gradescope.py": "grader",
    "test_verdicts.py": "grader", "test_corpus.py": "grader", "test_forkserver.py": "grader",
}

#: The slowest test files, slowest first (measured with `pytest --durations`); the rest follow in
#: collection order.
LONGEST_FIRST = ["test_lessons.py", "test_selfcheck.py", "test_grading.py", "test_corpus.py",
                 "test_grader_attacks.py", "test_grader_fairness.py", "test_grader_class.py",
                 "test_shortcut_kernels.py", "test_check_seeds.py", "test_gradebook.py", "test_verdicts.py",
                 "test_whiteboard.py", "test_evidence.py", "test_runner.py", "test_learner_desk.py"]


def pytest_addoption(parser):
    parser.addoption("--lessons", default=None, metavar="NN,NN",
                     help="only these lessons' items of the tests parametrised by lesson (e.g. 00,04; "
                          "the others run whole): what .ci/as_learner runs as an ordinary user")
    parser.addoption("--seeds", type=int, default=4,
                     help="tests/test_check_seeds.py: hidden-case seeds per solution and honest variant "
                          "(200: the full run)")


def pytest_configure(config):
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def _lesson_param(item):
    """The Lesson an item is parametrised with (its `lesson` argument), or None."""
    return getattr(getattr(item, "callspec", None), "params", {}).get("lesson")


def pytest_collection_modifyitems(config, items):
    wanted = config.getoption("--lessons")
    if wanted:
        numbers = {int(n) for n in wanted.split(",") if n.strip()}
        dropped = [i for i in items if getattr(_lesson_param(i), "number", None) not in (None, *numbers)]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [i for i in items if i not in dropped]
    for item in items:
        if any(item.get_closest_marker(name) for name in MARKERS):
            continue
        path = item.path
        if "browser_tests" in path.parts:
            kind = "browser"
        elif path.suffix == ".ipynb":
            kind = "notebooks"
        else:
            kind = BY_FILE.get(path.name, "unit")
        item.add_marker(getattr(pytest.mark, kind))
    # The longest files first: `make test` hands whole files to two workers (pytest-xdist,
    # `--dist loadfile --no-loadscope-reorder`: in this order, not by number of tests), so a long
    # file started last would leave one core idle at the end.
    items.sort(key=lambda item: LONGEST_FIRST.index(item.path.name) if item.path.name in LONGEST_FIRST
               else len(LONGEST_FIRST))


@pytest.fixture(scope="module")
def selected_lessons(request) -> set[str]:
    """Stems of the lessons that this run's items of the requesting test file are parametrised
    with: a module fixture that runs every lesson at once (nbval, grading) runs only these
    (`-k 07`, `--lessons 00,04`)."""
    return {_lesson_param(item).stem for item in request.session.items
            if item.module is request.module and _lesson_param(item) is not None}
