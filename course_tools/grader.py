"""`course grade PATH`: grade a learner's exercise notebook robustly.

The learner's notebook is never executed as it is. The grader rebuilds it from the
official exercise (in `exercises/`), taking only the learner's *answer* cells (matched by
cell id, then by order), and runs it in a separate Python process that captures the
registered checks *before* any learner code runs. So deleting or editing a grading cell,
or overwriting `check` inside the kernel, cannot raise the score. Every cell and every
check runs under a time limit; an answer that raises, hangs or does not parse scores 0
for its item, and the other items are still graded. The learner's file is only read.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from . import ROOT

ANSWER_TAG = "answer"
GRADE_CALL = re.compile(r"""^\s*check\(\s*["']([^"']+)["']""", re.M)


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def official_for(path: Path) -> Path:
    """The official exercise notebook that `path` is a copy of (by file name)."""
    candidate = ROOT / "exercises" / Path(path).name
    if not candidate.exists():
        known = ", ".join(sorted(p.name for p in (ROOT / "exercises").glob("*.ipynb")))
        raise ValueError(f"path: {Path(path).name!r} is not a course exercise; keep the "
                         f"original file name (one of: {known})")
    return candidate


def rebuild(official, learner) -> list[dict]:
    """The official code cells, with each answer cell's source taken from the learner."""
    learner_answers = [c for c in learner.cells if c.cell_type == "code" and ANSWER_TAG in _tags(c)]
    by_id = {c.get("id"): c for c in learner.cells if c.get("id")}
    plan, answer_index = [], 0
    for cell in official.cells:
        if cell.cell_type != "code":
            continue
        source = _source(cell)
        if ANSWER_TAG in _tags(cell):
            mine = by_id.get(cell.get("id"))
            if mine is None or mine.cell_type != "code":
                mine = learner_answers[answer_index] if answer_index < len(learner_answers) else None
            answer_index += 1
            plan.append({"kind": "answer", "source": _source(mine) if mine is not None else ""})
            continue
        graded = GRADE_CALL.findall(source)
        if graded:
            plan.extend({"kind": "grade", "id": exercise_id} for exercise_id in graded)
        else:
            plan.append({"kind": "setup", "source": source})
    return plan


def grade(path, cell_timeout: float = 60.0, total_timeout: float = 600.0) -> dict:
    """Grade the notebook at `path`; returns {"score", "max_score", "items": [...]}."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"path: no such file {str(path)!r}")
    official = nbformat.read(official_for(path), as_version=4)
    try:
        learner = nbformat.read(path, as_version=4)
    except Exception as error:
        raise ValueError(f"path: {path.name} is not a readable notebook ({error})") from error
    plan = rebuild(official, learner)
    graded_ids = [step["id"] for step in plan if step["kind"] == "grade"]

    from .grading import load_all
    registry = load_all()
    nonce = secrets.token_hex(16)
    request = json.dumps({"nonce": nonce, "plan": plan, "cell_timeout": cell_timeout})
    results: dict[str, dict] = {}
    note = ""
    with tempfile.TemporaryDirectory() as workdir:
        env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
        try:
            proc = subprocess.run([sys.executable, "-m", "course_tools.grader_worker"], input=request,
                                  capture_output=True, text=True, cwd=workdir, env=env,
                                  timeout=total_timeout)
            stdout = proc.stdout
        except subprocess.TimeoutExpired as expired:
            stdout = expired.stdout.decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
            note = f"grading stopped after {total_timeout:.0f} s"
    prefix = f"RESULT {nonce} "
    for line in stdout.splitlines():
        if line.startswith(prefix):
            item = json.loads(line[len(prefix):])
            results.setdefault(item["id"], item)  # the first verdict for an id stands

    items = []
    for exercise_id in graded_ids:
        max_points = registry[exercise_id].points if exercise_id in registry else 0
        item = results.get(exercise_id) or {
            "id": exercise_id, "points": 0, "max_points": max_points, "passed": False,
            "feedback": note or "not graded: the grading process ended before this item"}
        # max_points from the grader's own registry, never from the worker
        items.append({"id": exercise_id, "points": min(int(item["points"]), max_points),
                      "max_points": max_points, "passed": bool(item["passed"]),
                      "feedback": str(item["feedback"])})
    return {"score": sum(i["points"] for i in items),
            "max_score": sum(i["max_points"] for i in items), "items": items}


def format_report(report: dict, name: str) -> str:
    import pandas as pd
    table = pd.DataFrame(report["items"], columns=["id", "points", "max_points", "passed", "feedback"])
    with pd.option_context("display.max_colwidth", 120, "display.width", 200):
        body = table.to_string(index=False)
    return f"{name}\n{body}\n\nscore: {report['score']} / {report['max_score']}"
