"""Grading on Gradescope, on its workers: `python -m course_tools.gradescope run` grades the
submission of one container and writes Gradescope's results.json; `install` (run by the bundle's
setup.sh) puts the bundle's exercise where the grader reads it. The bundle is built by
`gradescope_bundle.py`.

As root, the grader isolates the learner's code in mount and network namespaces. Gradescope's
containers may refuse those (no CAP_SYS_ADMIN): the grader then says so (a `sandbox` error) and
this runner grades again as the unprivileged user `nobody` (uid 65534; COURSE_GRADESCOPE_UID,
or COURSE_GRADESCOPE_UNPRIVILEGED=1 to go there directly), as `course grade` grades
on a laptop - limits, watchdog and cleanup hold, and the learner cannot write the course, the
results or anything root owns, but it runs under the grader's uid (docs/instructors.md: "What is not
defended against"). Each Gradescope submission runs in a container of its own.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import ROOT
from ..grader import official_items
from .discovery import submissions
from .gradescope_bundle import CONFIG

NOBODY = 65534
# `python -m course_tools.gradescope --help`'s description: the first line the command always had
DESCRIPTION = "Grading on Gradescope: `course gradescope NN --out autograder.zip` builds an autograder bundle,"


def install(source: Path) -> list[Path]:
    """Put the bundle's exercise notebooks where the installed grader reads the official ones
    (`course_tools.ROOT / exercises`); readable by the learner's uid."""
    if (ROOT / "pyproject.toml").exists():      # a checkout, not the installed wheel: leave it alone
        raise SystemExit(f"course_tools here comes from the checkout {ROOT}, not from the installed wheel: "
                         "nothing installed (run it from another folder, with the wheel installed)")
    target = ROOT / "exercises"
    target.mkdir(parents=True, exist_ok=True)
    os.chmod(target, 0o755)
    written = []
    for notebook in sorted((Path(source) / "exercises").glob("*.ipynb")):
        shutil.copyfile(notebook, target / notebook.name)
        os.chmod(target / notebook.name, 0o644)
        written.append(target / notebook.name)
    config = Path(source) / CONFIG
    if config.exists():
        shutil.copyfile(config, ROOT / CONFIG)
    return written


def _titles(number: int) -> dict[str, str]:
    try:
        return {i["id"]: i["title"] for i in official_items(number)}
    except Exception:  # noqa: BLE001 - titles are a nicety
        return {}


def _test_name(item_id: str, title: str) -> str:
    return f"{item_id}: {title}" if title else item_id


def _written_test(item: dict, visibility: str) -> dict:
    """A written answer: graded by hand in the assignment's manual question of the same name
    (`manual_questions` in course_gradescope.json), so worth 0 points in the autograder's results;
    the test shows the answer, and the rubric once grades are published."""
    answer = item.get("answer") or "(nothing written)"
    rubric = "\n".join(f"- {point}" for point in item.get("rubric", []))
    return {"name": f"{item['id']}: written answer ({item['max_points']} points, graded by hand)",
            "score": 0, "max_score": 0, "status": "passed" if item.get("answer") else "failed",
            "output": f"Your answer:\n{answer}\n\nGraded by the course staff with this rubric:\n{rubric}",
            "visibility": "after_published" if visibility == "visible" else visibility,
            "extra_data": {"manual": True, "points": item["max_points"], "rubric": item.get("rubric", [])}}


def _results(number: int, visibility: str, report: dict | None, output: str, seed: int,
             file: str, started: float) -> dict:
    titles = _titles(number)
    tests = []
    if report is not None:
        for item in report["items"]:
            if item.get("manual"):    # Gradescope's manual question grades it: shown, worth 0 here
                tests.append(_written_test(item, visibility))
                continue
            tests.append({"name": _test_name(item["id"], titles.get(item["id"], "")),
                          "score": item["points"], "max_score": item["max_points"],
                          "status": "passed" if item["passed"] else "failed",
                          "output": item["feedback"], "visibility": visibility})
        score = report["score"]
    else:      # not graded: every item at 0, so the student sees what the assignment is worth
        try:
            items = official_items(number)
        except Exception:  # noqa: BLE001
            items = []
        for item in items:
            if item.get("manual"):
                continue
            tests.append({"name": _test_name(item["id"], item["title"]), "score": 0,
                          "max_score": item["max_points"], "status": "failed",
                          "output": "not graded: " + output, "visibility": visibility})
        score = 0
    return {"score": score, "execution_time": round(time.monotonic() - started), "output": output,
            "stdout_visibility": "hidden",
            "extra_data": {"lesson": f"{number:02d}", "seed": seed, "file": file},
            "tests": tests}


def _grade_as(uid: int, path: str, options: dict) -> dict:
    """Grade in a child process running as `uid` (no root, so no namespaces needed). The child
    answers on its stdout, on the line that starts with a token it read from stdin."""
    work = Path(tempfile.mkdtemp(prefix="course-gradescope-"))
    try:
        os.chmod(work, 0o700)
        copy = work / "submission.ipynb"
        shutil.copyfile(path, copy)
        for p in (work, copy):
            os.chown(p, uid, uid)
        token = secrets.token_hex(16)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(work), "MPLCONFIGDIR": str(work),
               "TMPDIR": tempfile.gettempdir()}
        command = [sys.executable, "-m", "course_tools.gradescope", "grade-one", str(copy),
                   "--seed", str(options["seed"]), "--cell-timeout", str(options["cell_timeout"])]
        if options.get("item_timeout") is not None:
            command += ["--item-timeout", str(options["item_timeout"])]
        try:
            proc = subprocess.run(command, input=token + "\n", capture_output=True, text=True, cwd=work, env=env,
                                  user=uid, group=uid, extra_groups=[], timeout=3600)
        except (OSError, subprocess.SubprocessError) as error:
            return {"error": {"code": "sandbox", "message": f"grading as uid {uid} failed too: "
                              f"{type(error).__name__}: {error} (can uid {uid} run {sys.executable}?)"}}
        answers = [line[len(token) + 1:] for line in proc.stdout.splitlines() if line.startswith(token + " ")]
        if not answers:
            return {"error": {"code": "sandbox", "message": f"grading as uid {uid} gave no answer "
                              f"(exit status {proc.returncode}): {proc.stderr[-300:]}"}}
        return json.loads(answers[-1])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _grade(path: str, options: dict) -> dict:
    """{"report": ...} or {"error": {"code", "message"}}."""
    from ..grader import GradeError, grade
    uid = int(os.environ.get("COURSE_GRADESCOPE_UID", NOBODY))
    if os.environ.get("COURSE_GRADESCOPE_UNPRIVILEGED") and os.geteuid() == 0:   # skip the namespaces
        return _grade_as(uid, path, options)
    try:
        return {"report": grade(path, **options)}
    except GradeError as error:
        if error.code == "sandbox" and os.geteuid() == 0 and not os.environ.get("COURSE_GRADESCOPE_NO_FALLBACK"):
            print(f"the sandbox is not available here ({error}); grading as uid {uid} instead", file=sys.stderr)
            return _grade_as(uid, path, options)
        return {"error": {"code": error.code, "message": str(error)}}


def run(root, seed: int | None = None) -> tuple[dict, int]:
    """Grade the submission under `root` (laid out like /autograder) and write
    root/results/results.json - whatever happens; returns (the results, the exit status)."""
    try:
        return _run(root, seed)
    except Exception as error:  # noqa: BLE001 - Gradescope needs a results.json to show anything
        results = {"score": 0, "output": f"The autograder failed ({type(error).__name__}: {error}); "
                   "this is not about your code - ask the course staff to rerun it.", "tests": []}
        results_dir = Path(root) / "results"
        results_dir.mkdir(parents=True, exist_ok=True)
        (results_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        return results, 1


def _run(root, seed: int | None) -> tuple[dict, int]:
    from ..grader import GradeError, read_notebook
    started = time.monotonic()
    root = Path(root)
    config_path = next((p for p in (root / "source" / CONFIG, ROOT / CONFIG) if p.exists()), None)
    if config_path is None:
        raise FileNotFoundError(f"no {CONFIG} in {root / 'source'}: is this an autograder built by `course gradescope`?")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    number, visibility = int(config["lesson"]), config.get("visibility", "visible")
    if os.environ.get("COURSE_GRADE_SEED"):
        seed = int(os.environ["COURSE_GRADE_SEED"])
    seed = secrets.randbelow(2**31) if seed is None else seed
    results_dir = root / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    submission = root / "submission"
    entries = submissions(submission) if submission.is_dir() else []
    mine, others = [], []
    for entry in entries:
        if entry.problem:
            others.append(f"{entry.file} ({entry.problem.split(':', 1)[0]})")
            continue
        try:
            course = read_notebook(entry.path).get("metadata", {}).get("course")
        except GradeError as error:
            others.append(f"{entry.file} ({error.code})")
            continue
        lesson = course.get("lesson") if isinstance(course, dict) else None
        if lesson == number and type(lesson) is int:
            mine.append(entry)
        elif type(lesson) is int:
            others.append(f"{entry.file} (lesson {lesson:02d}'s exercise)")
        else:
            others.append(f"{entry.file} (not a course exercise)")
    mine.sort(key=lambda e: (os.path.basename(e.file) != config.get("exercise"), e.file))
    status = 0
    if not mine:
        seen = "; ".join(others) if others else "no file"
        output = (f"No notebook of lesson {number:02d}'s exercise was submitted (received: {seen}). "
                  f"Submit your copy of {config.get('exercise', 'the exercise')}.")
        results = _results(number, visibility, None, output, seed, "", started)
    else:
        chosen = mine[0]
        options = {"cell_timeout": float(config.get("cell_timeout") or 60.0),
                   "item_timeout": config.get("item_timeout"), "seed": seed}
        answer = _grade(chosen.path, options)
        ignored = [e.file for e in mine[1:]] + others
        note = f" Not graded: {'; '.join(ignored)}." if ignored else ""
        if "report" in answer:
            report = answer["report"]
            output = (f"Graded {chosen.file} (lesson {number:02d}, {config.get('id', '')}): "
                      f"{report['score']} / {report['max_score']} points. Hidden cases' seed: {seed}.{note}")
            results = _results(number, visibility, report, output, seed, chosen.file, started)
        else:
            error = answer["error"]
            if error["code"] in ("sandbox", "internal"):
                status = 1       # the machine, not the student: Gradescope shows the run as failed
            output = f"{chosen.file} could not be graded: {error['message']}{note}"
            results = _results(number, visibility, None, output, seed, chosen.file, started)
    results_path = results_dir / "results.json"
    results_path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return results, status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course_tools.gradescope", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="grade the submission and write results/results.json")
    p.add_argument("--root", default=os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    p.add_argument("--seed", type=int, default=None, help="the hidden cases' seed (default: a fresh one)")
    p = sub.add_parser("install", help="(setup.sh) put the bundle's exercise where the grader reads it")
    p.add_argument("--source", default=os.path.join(os.environ.get("AUTOGRADER_ROOT", "/autograder"), "source"))
    p = sub.add_parser("grade-one", help="(internal) grade one notebook; answer on stdout after a token")
    p.add_argument("path")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--cell-timeout", type=float, default=60.0)
    p.add_argument("--item-timeout", type=float, default=None)
    args = parser.parse_args(argv)
    if args.command == "run":
        results, status = run(args.root, seed=args.seed)
        print(f"score {results['score']}: {results['output']}")
        return status
    if args.command == "install":
        for path in install(Path(args.source)):
            print(f"installed {path}")
        return 0
    token = sys.stdin.readline().strip()
    sys.stdin.close()
    from ..grader import GradeError, grade
    try:
        answer = {"report": grade(args.path, cell_timeout=args.cell_timeout, item_timeout=args.item_timeout,
                                  seed=args.seed)}
    except GradeError as error:
        answer = {"error": {"code": error.code, "message": str(error)}}
    except Exception as error:  # noqa: BLE001
        answer = {"error": {"code": "internal", "message": type(error).__name__}}
    print(f"{token} {json.dumps(answer)}", flush=True)
    return 0

