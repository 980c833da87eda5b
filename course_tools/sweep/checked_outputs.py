"""The sweep's checked outputs: per lesson and `# NBVAL_CHECK_OUTPUT` cell, the text each run
printed there (as the ledger recorded it from the executed notebook), written to the committed
`docs/sweep/checked_outputs.json`, and the check that each such cell printed one text in every run,
equal to the stored notebook's.

A checked output is compared character by character by nbval on whatever CPU runs the tests, so it
must be an exact fact; a text that changes with the seed would also change with the CPU.
`tests/test_checked_outputs.py` requires every checked cell to have printed one text in every
recorded run, equal to the stored one.
"""
from __future__ import annotations

import configparser
import hashlib
import json
import re
from pathlib import Path

from .. import ROOT
from ..manifest import Lesson
from .ledger import RUNS_DIR, Run, current_runs

CHECK_MARKER = "NBVAL_CHECK_OUTPUT"
CHECKED_OUTPUTS = ROOT / "docs" / "sweep" / "checked_outputs.json"
SANITIZE_CFG = ROOT / "tests" / "sanitize.cfg"


def digest(text: str) -> str:
    """The first 16 hex digits of the text's SHA-256: how the file names sources and outputs."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _sanitizers(cfg: Path = SANITIZE_CFG) -> list[tuple[re.Pattern, str]]:
    """nbval's sanitisers (`--nbval-sanitize-with`): per section a `regex` and its `replace`."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(cfg, encoding="utf-8")
    return [(re.compile(parser[name]["regex"]), parser[name]["replace"]) for name in parser.sections()]


def output_text(cell, sanitizers: list[tuple[re.Pattern, str]] | None = None) -> str:
    """What nbval compares in a checked cell, as one text: its streams, the text/plain of its
    results and displays, its error line; sanitised as the tests sanitise it."""
    parts = []
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "stream":
            text = "".join(out.get("text", ""))
            parts.append(text if out.get("name") == "stdout" else f"[{out.get('name')}] {text}")
        elif kind in ("execute_result", "display_data"):
            parts.append("".join(out.get("data", {}).get("text/plain", "")) + "\n")
        elif kind == "error":
            parts.append(f"[error] {out.get('ename')}: {out.get('evalue')}\n")
    text = "".join(parts)
    for pattern, replace in (_sanitizers() if sanitizers is None else sanitizers):
        text = pattern.sub(replace, text)
    return text


def checked_cells(nb, sanitizers: list[tuple[re.Pattern, str]] | None = None) -> dict[str, dict]:
    """{cell id: {"source": digest of its source, "text": its output text}} for every code cell
    marked `# NBVAL_CHECK_OUTPUT` in the notebook `nb` (a dict or nbformat node)."""
    sanitizers = _sanitizers() if sanitizers is None else sanitizers
    found = {}
    for cell in nb["cells"]:
        source = "".join(cell.get("source", ""))
        if cell.get("cell_type") == "code" and CHECK_MARKER in source:
            # a run that stopped before this cell leaves it unexecuted: say so, not "printed nothing"
            text = (output_text(cell, sanitizers) if cell.get("execution_count") is not None
                    else "[not executed]\n")
            found[cell["id"]] = {"source": digest(source), "text": text}
    return found


def record_checked_outputs(lessons: list[Lesson], runs: list[Run], ledger_dir: Path = RUNS_DIR) -> dict[str, dict]:
    """Per lesson (notebook stem), the checked cells' texts in every run of `runs` the ledger holds
    for the lesson's current code: {stem: {"runs": [names], "cells": {cell id: {"source": digest,
    "texts": {digest: text}, "runs": {run name: digest of its text}}}}}. Lessons with no such run
    are left out. The cell's source digest is the one of the first run found (all runs of one
    digest executed the same code)."""
    recorded = {}
    for lesson in lessons:
        held = current_runs(lesson, ledger_dir)
        names, cells = [], {}
        for run in runs:
            if run.name not in held:
                continue
            names.append(run.name)
            for cell_id, found in held[run.name].get("checked", {}).items():
                entry = cells.setdefault(cell_id, {"source": found["source"], "texts": {}, "runs": {}})
                key = digest(found["text"])
                entry["texts"][key] = found["text"]
                entry["runs"][run.name] = key
        if names:
            recorded[lesson.stem] = {"runs": sorted(names), "cells": cells}
    return recorded


def write_checked_outputs(lessons: list[Lesson], runs: list[Run], ledger_dir: Path = RUNS_DIR,
                          path: Path | None = None) -> Path | None:
    """Record the checked outputs of the runs in the ledger (see `record_checked_outputs`) into the
    committed JSON file `path` (default `docs/sweep/checked_outputs.json`): the lessons recorded
    replace their entries, the others keep theirs. Sorted keys, so a re-run that printed the same
    texts leaves the file unchanged. Returns the path, or None when no run was found."""
    path = CHECKED_OUTPUTS if path is None else Path(path)
    recorded = record_checked_outputs(lessons, runs, ledger_dir)
    if not recorded:
        return None
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    lessons_data = data.get("lessons", {})
    lessons_data.update(recorded)
    known = {**data.get("runs", {}), **{run.name: {"seed": run.seed, "threads": run.threads} for run in runs}}
    used = {name for entry in lessons_data.values() for name in entry["runs"]}
    data = {"about": "The text each `# NBVAL_CHECK_OUTPUT` cell printed in each run of `course sweep` "
                     "(keys: notebook stem, cell id; digests: first 16 hex digits of SHA-256 of the "
                     "cell's source and of its sanitised output text). Written by `course sweep` and "
                     "`course sweep --collect`; checked by tests/test_checked_outputs.py.",
            "runs": {name: known[name] for name in sorted(used)},
            "lessons": lessons_data}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def checked_output_problems(notebooks: dict[str, dict], data: dict) -> list[str]:
    """What is wrong with the checked outputs of `notebooks` ({stem: notebook}) given the recorded
    sweep `data` (the JSON of `write_checked_outputs`); empty when nothing is. Each checked cell must:

    - be in the data, recorded from its current source (else the sweep is out of date);
    - have been recorded in at least two seeds and in a run with more than one thread;
    - have printed the same text in every recorded run (a text that moves with the seed or the
      thread count would also move with the CPU: print such numbers in an unchecked cell and
      assert them with claim(...));
    - print, in the stored notebook, that very text (what nbval compares).

    Recorded cells that are no longer checked cells are reported too (stale data).
    """
    sanitizers = _sanitizers()
    problems = []
    recorded_lessons = data.get("lessons", {})
    run_info = data.get("runs", {})
    for stem, nb in sorted(notebooks.items()):
        lesson_data = recorded_lessons.get(stem)
        cells = checked_cells(nb, sanitizers)
        if lesson_data is None:
            if cells:
                problems.append(f"{stem}: no recorded sweep runs (run `course sweep --only {stem[:2]}`)")
            continue
        for cell_id, current in cells.items():
            where = f"{stem} cell {cell_id}"
            entry = lesson_data["cells"].get(cell_id)
            if entry is None:
                problems.append(f"{where}: not recorded by the sweep (run `course sweep --only {stem[:2]}`)")
                continue
            if entry["source"] != current["source"]:
                problems.append(f"{where}: its source changed since the sweep recorded it "
                                f"(run `course sweep --only {stem[:2]}`)")
            seeds = {run_info.get(name, {}).get("seed") for name in entry["runs"]}
            threads = {run_info.get(name, {}).get("threads", 1) for name in entry["runs"]}
            if len(seeds - {None}) < 2 or max(t or 1 for t in threads) < 2:
                problems.append(f"{where}: recorded in runs {sorted(entry['runs'])}: needs two seeds "
                                f"and a run with more than one thread")
            texts = set(entry["runs"].values())
            if len(texts) > 1:
                by_text = {}
                for name, key in sorted(entry["runs"].items()):
                    by_text.setdefault(key, []).append(name)
                shown = "; ".join(f"{names}: {entry['texts'].get(key, '?')!r}" for key, names in by_text.items())
                problems.append(f"{where}: prints different texts in different runs, so it is not an "
                                f"exact fact (print it unchecked, claim it with a margin): {shown}")
            stored = digest(current["text"])
            if texts and stored not in texts:
                recorded_text = entry["texts"].get(next(iter(sorted(texts))), "?")
                problems.append(f"{where}: the stored output {current['text']!r} is not what the sweep "
                                f"recorded ({recorded_text!r}): re-store the notebook or re-run the sweep")
        for cell_id in sorted(set(lesson_data["cells"]) - set(cells)):
            problems.append(f"{stem} cell {cell_id}: recorded, but no longer a checked cell of the "
                            f"notebook (re-run the sweep or delete its entry)")
    return problems
