"""Grading on Gradescope, the bundle: `course gradescope NN --out autograder.zip` builds the
autograder zip; `python -m course_tools.gradescope run` (`gradescope_run.py`) is what it runs on
Gradescope's workers.

The bundle (upload it as the programming assignment's autograder, base image Ubuntu 22.04 or
later) holds:

- `setup.sh` - run once by Gradescope, as root, when it builds the image: a virtual environment
  at /autograder/course-venv with torch 2.13.0 (CPU build, from the PyTorch index) and this
  course from its wheel (`dist/`), every dependency at the version of `requirements.lock`; with
  a `wheels/` folder in the bundle (`--wheelhouse`), everything installs from it with no network.
  Then `python -m course_tools.gradescope install` puts the official exercise where the grader
  looks for it;
- `run_autograder` - run once per submission: grades /autograder/submission/*.ipynb (the notebook
  of this lesson, found by its metadata) with `course_tools.grader.grade` - the same grader, sandbox
  and checks as `course grade` - and writes /autograder/results/results.json (Gradescope's
  format: score, and one test per graded item with its name, score, max_score, output and
  visibility). The hidden cases' seed is recorded in the output and in `extra_data`;
- `course_gradescope.json` (lesson, timeouts, visibility), the exercise, the lock and the wheel.

`AUTOGRADER_ROOT` (default /autograder) and `COURSE_PYTHON` (default the venv's python) let the
same scripts run against a folder laid out like Gradescope's, which is how the tests run them.
"""
from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from .. import ROOT
from ..grader import official_items

CONFIG = "course_gradescope.json"
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
TORCH = "torch==2.13.0"
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (with network access).
# A virtual environment with torch (CPU) and this course, every package at its locked version.
# With a wheels/ folder in the bundle (course gradescope --wheelhouse) nothing is downloaded.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"          # /autograder/source
ROOT="${AUTOGRADER_ROOT:-/autograder}"
VENV="${COURSE_VENV:-$ROOT/course-venv}"
LOCK="$HERE/requirements.lock"

python_ok() { "$1" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null && python_ok "$(command -v "$candidate")"; then
      PYTHON="$(command -v "$candidate")"; break
    fi
  done
fi
if [ -z "$PYTHON" ]; then    # Ubuntu 22.04's python3 is 3.10: the course needs 3.11 or later
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.11 python3.11-venv
  PYTHON="$(command -v python3.11)"
fi

"$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
if compgen -G "$HERE/wheels/*.whl" >/dev/null; then
  OFFLINE=(--no-index --find-links "$HERE/wheels")
  "${PIP[@]}" "${OFFLINE[@]}" -c "$LOCK" __TORCH__
else
  OFFLINE=()
  "${PIP[@]}" --upgrade pip -c "$LOCK"
  "${PIP[@]}" __TORCH__ --index-url __TORCH_INDEX__
fi
"${PIP[@]}" "${OFFLINE[@]}" -c "$LOCK" "$HERE"/dist/*.whl
"$VENV/bin/python" -m course_tools.gradescope install --source "$HERE"
# the grader runs the learner's code as another uid, which must read the environment
chmod -R o+rX "$VENV"
echo "course autograder installed: $("$VENV/bin/python" -c 'import course_tools, torch; print(course_tools.ROOT, torch.__version__)')"
"""

RUN_AUTOGRADER = r"""#!/usr/bin/env bash
# Gradescope runs this once per submission, as root: the student's files are in
# /autograder/submission/, and /autograder/results/results.json must be written.
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${COURSE_PYTHON:-$ROOT/course-venv/bin/python}"
cd "$ROOT" || exit 1       # python -m imports from the working folder first: not a stray checkout
exec "$PYTHON" -m course_tools.gradescope run --root "$ROOT"
"""

BUNDLE_README = """Gradescope autograder for lesson {number:02d} ({id}) of "Transformers, Question by Question".

Upload this zip as the autograder of a programming assignment (Configure Autograder > Zip file
upload; base image Ubuntu 22.04 or later). setup.sh installs Python 3.11+, torch 2.13.0 (CPU)
and the course from dist/ with the versions of requirements.lock; run_autograder grades the
student's notebook and writes /autograder/results/results.json. Students submit their exercise
notebook ({exercise}; any file name: the lesson is read from the notebook's metadata).
The written answer (a manually graded item) is not scored here: add it to the assignment's
outline as a manual question of the same name and points, with the rubric that
course_gradescope.json lists under "manual_questions"; the autograder's results show each
student's answer under that name (worth 0 there) and the rubric once grades are published.
Built by `course gradescope {number:02d}`; see the course's docs/instructors.md, "Grading on Gradescope".
"""


# ------------------------------------------------------------------ building the bundle

def _lesson(item: str):
    from ..manifest import LESSONS
    key = f"{int(item):02d}" if str(item).isdigit() else str(item)
    lesson = next((l for l in LESSONS if f"{l.number:02d}" == key or l.id == key), None)
    if lesson is None or not lesson.has_exercise or not lesson.exercise.exists():
        graded = ", ".join(f"{l.number:02d}" for l in LESSONS if l.has_exercise and l.exercise.exists())
        raise ValueError(f"lesson: {item!r} is not a lesson with an exercise (those are {graded})")
    return lesson


def build_wheel(dest: Path) -> Path:
    """`pip wheel --no-deps` of this project, built from a clean copy of its sources (nothing is
    written into the checkout) with the environment's setuptools (no network)."""
    with tempfile.TemporaryDirectory(prefix="course-wheel-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, src / name)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
        for package in ("course_lib", "course_tools"):
            shutil.copytree(ROOT / package, src / package, ignore=ignore)
        dest.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                               "--quiet", "--disable-pip-version-check", "--wheel-dir", str(dest), str(src)],
                              capture_output=True, text=True, cwd=tmp)
        if proc.returncode != 0:
            raise RuntimeError(f"pip wheel failed: {proc.stderr[-2000:]}")
    wheels = sorted(dest.glob("course_lib-*.whl"))
    if not wheels:
        raise RuntimeError("pip wheel wrote no course_lib wheel")
    return wheels[-1]


def _add(archive: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    archive.writestr(info, data)


def build_bundle(lesson_item, out, visibility: str = "visible", wheelhouse=None,
                 cell_timeout: float = 60.0, item_timeout: float | None = None) -> Path:
    """Write the Gradescope autograder zip for one lesson's exercise; returns its path."""
    from ..deps import LOCK
    lesson = _lesson(lesson_item)
    if visibility not in VISIBILITIES:
        raise ValueError(f"visibility: {visibility!r} is not one of {', '.join(VISIBILITIES)}")
    if not LOCK.exists():
        raise ValueError(f"{LOCK.name} is missing: the bundle installs the locked versions (make lock)")
    wheels = sorted(Path(wheelhouse).glob("*.whl")) if wheelhouse else []
    if wheelhouse and not wheels:
        raise ValueError(f"wheelhouse: no .whl file in {wheelhouse}")
    manual = [{"id": i["id"], "points": i["max_points"], "rubric": i["rubric"]}
              for i in official_items(lesson.number) if i["manual"]]
    config = {"lesson": lesson.number, "id": lesson.id, "exercise": lesson.exercise.name,
              "visibility": visibility, "cell_timeout": cell_timeout, "item_timeout": item_timeout,
              # add each as a manual question of the assignment (its outline), with this rubric
              "manual_questions": manual}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="course-bundle-") as tmp:
        wheel = build_wheel(Path(tmp))
        partial = out.with_name(out.name + ".partial")
        with zipfile.ZipFile(partial, "w") as archive:
            setup = SETUP_SH.replace("__TORCH__", TORCH).replace("__TORCH_INDEX__", TORCH_INDEX)
            _add(archive, "setup.sh", setup.encode(), executable=True)
            _add(archive, "run_autograder", RUN_AUTOGRADER.encode(), executable=True)
            _add(archive, CONFIG, (json.dumps(config, indent=2) + "\n").encode())
            _add(archive, "requirements.lock", LOCK.read_bytes())
            _add(archive, f"dist/{wheel.name}", wheel.read_bytes())
            _add(archive, f"exercises/{lesson.exercise.name}", lesson.exercise.read_bytes())
            _add(archive, "README.txt", BUNDLE_README.format(number=lesson.number, id=lesson.id,
                                                             exercise=lesson.exercise.name).encode())
            for extra in wheels:
                archive.write(extra, f"wheels/{extra.name}")
        partial.replace(out)
    return out


def cli_build(args) -> int:
    try:
        path = build_bundle(args.lesson, args.out, visibility=args.visibility, wheelhouse=args.wheelhouse,
                            cell_timeout=args.cell_timeout, item_timeout=args.item_timeout)
    except (ValueError, RuntimeError, OSError) as error:
        print(f"course gradescope: {error}", file=sys.stderr)
        return 2
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB): " + ", ".join(names))
    print("upload it as the assignment's autograder (Gradescope: Configure Autograder > Zip file upload)")
    with zipfile.ZipFile(path) as archive:
        manual = json.loads(archive.read(CONFIG)).get("manual_questions", [])
    for question in manual:
        rubric = "".join(f"\n    - {point}" for point in question["rubric"])
        print(f"then add a manual question '{question['id']}' worth {question['points']} points to the "
              f"assignment's outline (Edit Outline), graded with this rubric:{rubric}")
    return 0

