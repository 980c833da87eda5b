"""`course gradescope NN` (issue 20): the autograder bundle, unzipped into a temporary folder laid
out like Gradescope's /autograder, with the course imported from the bundle's wheel: a solved, a
blank and a wrong-file submission each write a results.json valid under Gradescope's documented
format, with full, zero and zero scores (the two gradings run in parallel)."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from course_tools import ROOT

pytestmark = pytest.mark.grader

EXERCISE = ROOT / "exercises" / "01_scale_sqrt_dk.ipynb"
SOLUTION = ROOT / "solutions" / "01_scale_sqrt_dk.ipynb"
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}


def check_results_schema(results: dict) -> None:
    """Gradescope's results.json (Autograder Specifications): a numeric score (or one per test),
    and tests, each an object with a name, a numeric score and max_score, a string output and a
    visibility among the four it knows; the optional top-level fields with their types."""
    assert isinstance(results, dict)
    number = (int, float)
    assert isinstance(results.get("score"), number) and not isinstance(results["score"], bool)
    assert isinstance(results["tests"], list)
    for test in results["tests"]:
        assert isinstance(test, dict)
        assert isinstance(test["name"], str) and test["name"]
        assert isinstance(test["score"], number) and isinstance(test["max_score"], number)
        assert 0 <= test["score"] <= test["max_score"]
        assert isinstance(test["output"], str)
        assert test["visibility"] in VISIBILITY
        assert test.get("status", "passed") in ("passed", "failed")
    for key, kind in (("execution_time", number), ("output", str), ("stdout_visibility", str),
                      ("extra_data", dict)):
        assert key not in results or isinstance(results[key], kind), key
    assert results.get("stdout_visibility", "visible") in VISIBILITY
    assert set(results) <= {"score", "execution_time", "output", "output_format", "test_output_format",
                            "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests",
                            "leaderboard"}
    json.dumps(results)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "autograder.zip"
    proc = subprocess.run([sys.executable, "-m", "course_tools.cli", "gradescope", "01", "--out", str(out),
                           "--visibility", "after_due_date", "--cell-timeout", "30", "--item-timeout", "10"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def site(bundle, tmp_path_factory):
    """The course as setup.sh installs it: the wheel's files, then the `install` step."""
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(bundle) as archive:
        wheel = next(n for n in archive.namelist() if n.startswith("dist/") and n.endswith(".whl"))
        with zipfile.ZipFile(archive.open(wheel)) as inner:
            inner.extractall(site)
    for folder in [site, *site.rglob("*")]:     # setup.sh: chmod -R o+rX (the learner's uid reads it)
        folder.chmod(folder.stat().st_mode | 0o005 | (0o001 if folder.is_dir() else 0))
    source = tmp_path_factory.mktemp("source")
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(source)
    proc = subprocess.run([sys.executable, "-m", "course_tools.gradescope", "install", "--source", str(source)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(site)}, timeout=120,
                          cwd=source)     # not the checkout: python -m would import the course from there
    assert proc.returncode == 0, proc.stderr
    assert (site / "exercises" / EXERCISE.name).read_bytes() == EXERCISE.read_bytes()
    where = subprocess.run([sys.executable, "-c", "import course_tools; print(course_tools.ROOT)"], cwd=source,
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(site)})
    assert where.stdout.strip() == str(site), "the grader must come from the bundle's wheel"
    return site


def test_the_bundle_holds_what_gradescope_runs(bundle):
    with zipfile.ZipFile(bundle) as archive:
        names = set(archive.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
        config = json.loads(archive.read("course_gradescope.json"))
        setup = archive.read("setup.sh").decode()
        lock = archive.read("requirements.lock")
    assert {"setup.sh", "run_autograder", "course_gradescope.json", "requirements.lock",
            f"exercises/{EXERCISE.name}"} <= names
    assert any(n.startswith("dist/course_lib-") and n.endswith("-py3-none-any.whl") for n in names)
    assert modes["setup.sh"] & stat.S_IXUSR and modes["run_autograder"] & stat.S_IXUSR
    assert config["lesson"] == 1 and config["visibility"] == "after_due_date" and config["item_timeout"] == 10
    assert lock == (ROOT / "requirements.lock").read_bytes()
    assert "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in setup
    assert "-c \"$LOCK\"" in setup and "course_tools.gradescope install" in setup
    for script in ("setup.sh", "run_autograder"):
        with zipfile.ZipFile(bundle) as archive:
            text = archive.read(script)
        assert subprocess.run(["bash", "-n"], input=text, capture_output=True).returncode == 0, script


def _gradescope_root(tmp_path: Path, bundle: Path, name: str, files: dict[str, bytes]) -> Path:
    root = tmp_path / name
    (root / "source").mkdir(parents=True)
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    os.chmod(root / "run_autograder", 0o755)
    (root / "submission").mkdir()
    for filename, data in files.items():
        (root / "submission" / filename).write_bytes(data)
    return root


def _run_autograder(root: Path, site: Path, **env):
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "COURSE_PYTHON": sys.executable, "PYTHONPATH": str(site), **env}
    proc = subprocess.run([str(root / "run_autograder")], capture_output=True, text=True, env=env, timeout=600)
    assert (root / "results" / "results.json").exists(), (proc.returncode, proc.stdout, proc.stderr[-3000:])
    return proc, json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))


def _solved() -> bytes:
    exercise = nbformat.read(EXERCISE, as_version=4)
    solution = {c.id: c.source for c in nbformat.read(SOLUTION, as_version=4).cells}
    for cell in exercise.cells:
        if "answer" in cell.metadata.get("tags", []):
            cell.source = solution[cell.id]
    return nbformat.writes(exercise).encode()


def test_run_autograder_writes_valid_results_with_full_and_zero_scores(bundle, site, tmp_path):
    roots = {"solved": _gradescope_root(tmp_path, bundle, "solved", {"my answers (2).ipynb": _solved(),
                                                                     "notes.txt": b"hi"}),
             "blank": _gradescope_root(tmp_path, bundle, "blank", {EXERCISE.name: EXERCISE.read_bytes()})}
    with ThreadPoolExecutor(2) as pool:
        done = dict(zip(roots, pool.map(lambda r: _run_autograder(r, site, COURSE_GRADE_SEED="11"), roots.values())))
    for name, (proc, results) in done.items():
        assert proc.returncode == 0, (name, proc.stderr[-3000:])
        check_results_schema(results)
        assert results["extra_data"]["seed"] == 11 and results["extra_data"]["lesson"] == "01"
        assert "seed: 11" in results["output"]
        assert all(t["visibility"] == "after_due_date" for t in results["tests"])
        assert all(t["name"].startswith("01.") for t in results["tests"])
    solved, blank = done["solved"][1], done["blank"][1]
    max_score = sum(t["max_score"] for t in solved["tests"])
    assert len(solved["tests"]) >= 2 and max_score > 0
    assert solved["score"] == max_score and all(t["score"] == t["max_score"] for t in solved["tests"])
    assert "my answers (2).ipynb" in solved["output"] and "notes.txt" in solved["output"]
    assert blank["score"] == 0 and sum(t["max_score"] for t in blank["tests"]) == max_score
    assert all("NotImplementedError" in t["output"] for t in blank["tests"] if t["max_score"])   # the written one: by hand


def test_a_submission_without_the_exercise_scores_zero_and_says_why(bundle, site, tmp_path):
    root = _gradescope_root(tmp_path, bundle, "wrong", {"answer.py": b"print(1)\n",
                                                        "00_welcome.ipynb": (ROOT / "exercises" / "00_welcome.ipynb").read_bytes()})
    proc, results = _run_autograder(root, site)
    assert proc.returncode == 0, proc.stderr[-3000:]
    check_results_schema(results)
    assert results["score"] == 0 and results["tests"] and all(t["score"] == 0 for t in results["tests"])
    assert "No notebook of lesson 01" in results["output"]
    assert "answer.py" in results["output"] and "lesson 00's exercise" in results["output"]


def test_the_schema_check_rejects_what_gradescope_would():
    good = {"score": 1, "tests": [{"name": "a", "score": 1, "max_score": 1, "output": "", "visibility": "visible"}]}
    check_results_schema(good)
    for broken in ({**good, "score": "1"}, {**good, "tests": [{**good["tests"][0], "visibility": "public"}]},
                   {**good, "tests": [{**good["tests"][0], "max_score": None}]}, {"tests": []}):
        with pytest.raises((AssertionError, KeyError)):
            check_results_schema(broken)


@pytest.mark.skipif(os.geteuid() != 0, reason="the fallback to an unprivileged uid is taken as root only")
def test_without_namespaces_root_grades_as_nobody_or_says_why(bundle, site, tmp_path):
    """Gradescope's containers may refuse mount namespaces: the runner then grades as uid 65534.
    Where that uid cannot run this Python (it lives under /root here), results.json says so."""
    try:
        nobody_runs_python = subprocess.run([sys.executable, "-c", "import course_tools"], user=65534, group=65534,
                                            extra_groups=[], capture_output=True, cwd="/",
                                            env={"PYTHONPATH": str(site)}).returncode == 0
    except OSError:
        nobody_runs_python = False
    root = _gradescope_root(tmp_path, bundle, "nobody", {"a.ipynb": _solved()})
    root.chmod(0o755)
    proc, results = _run_autograder(root, site, COURSE_GRADESCOPE_UNPRIVILEGED="1")
    check_results_schema(results)
    if nobody_runs_python:
        assert proc.returncode == 0 and results["score"] == sum(t["max_score"] for t in results["tests"]) > 0
    else:
        assert proc.returncode == 1 and results["score"] == 0
        assert "uid 65534" in results["output"] and all(t["score"] == 0 for t in results["tests"])
