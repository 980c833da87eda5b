"""The sweep's run ledger: which runs there are (`Run`, `DEFAULT_RUNS`), what a run depends on
(`code_digest`: the lesson's code, comments left out), and reading and recording the committed
ledger `docs/sweep/runs/<lesson>.json`, from which every other sweep file is derived."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from .. import ROOT
from ..manifest import Lesson


@dataclass(frozen=True)
class Run:
    """One configuration of the sweep."""
    name: str
    seed: int
    threads: int = 1

    def files(self, lesson: Lesson, out_dir: Path) -> tuple[Path, Path]:
        """Where this run of `lesson` writes its executed notebook and its claims."""
        stem = f"{lesson.stem}__{self.name.replace(' ', '').replace(',', '_')}"
        return out_dir / f"{stem}.ipynb", out_dir / f"{stem}.claims.jsonl"


#: Seeds 0-9, and seed 1 again with 2 threads (reductions round otherwise, as on another CPU).
DEFAULT_RUNS = [Run(f"seed {s}", s) for s in range(10)] + [Run("seed 1, 2 threads", 1, threads=2)]


def without_comments(source: str) -> str:
    """The code of a cell without its comments (and the lines they leave empty): what it runs. A
    cell Python cannot tokenise (an IPython magic, say) is kept as it is."""
    import io
    import tokenize
    lines = source.splitlines()
    try:
        comments = [t.start for t in tokenize.generate_tokens(io.StringIO(source).readline)
                    if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source
    for row, col in reversed(comments):
        lines[row - 1] = lines[row - 1][:col].rstrip()
    return "\n".join(line for line in lines if line.strip())


def code_digest(lesson: Lesson) -> str:
    """What a sweep run depends on: the code of the lesson's code cells (its Check yourself cell
    aside, comments left out), as the first 16 hex digits of a SHA-256. Editing prose, metadata, the
    quiz or a comment does not make a run stale."""
    import nbformat
    nb = nbformat.read(lesson.notebook, as_version=4)
    text = "\n\x00".join(without_comments(c.source) for c in nb.cells
                          if c.cell_type == "code" and c.get("id") != "check-yourself-quiz")
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: The committed run ledger: one JSON file per lesson (see `record_run`).
RUNS_DIR = ROOT / "docs" / "sweep" / "runs"


def ledger_path(lesson: Lesson, ledger_dir: Path = RUNS_DIR) -> Path:
    return Path(ledger_dir) / f"{lesson.stem}.json"


def read_ledger(lesson: Lesson, ledger_dir: Path = RUNS_DIR) -> dict:
    """The lesson's ledger: {"lesson", "digest", "runs": {run name: record}}; empty runs if none."""
    path = ledger_path(lesson, ledger_dir)
    if not path.exists():
        return {"lesson": lesson.stem, "digest": "", "runs": {}}
    return json.loads(path.read_text(encoding="utf-8"))


def current_runs(lesson: Lesson, ledger_dir: Path = RUNS_DIR, digest: str | None = None) -> dict[str, dict]:
    """The runs the ledger holds for the lesson's current code ({} when its code changed since)."""
    ledger = read_ledger(lesson, ledger_dir)
    digest = code_digest(lesson) if digest is None else digest
    return ledger["runs"] if ledger.get("digest") == digest else {}


def is_current(lesson: Lesson, run: "Run", ledger_dir: Path = RUNS_DIR, digest: str | None = None) -> bool:
    """Whether the ledger holds `run` of `lesson`, made from the lesson's current code (the
    ledger's digest matches `code_digest`)."""
    return run.name in current_runs(lesson, ledger_dir, digest)


def record_run(lesson: Lesson, run: "Run", digest: str, record: dict, ledger_dir: Path = RUNS_DIR) -> None:
    """Write one run's record into the lesson's ledger. A record of other code than the ledger's
    starts the ledger afresh (its runs are stale). Called by one process only (the sweep's main
    process), so parallel jobs cannot race on the file; sorted keys, so the same runs give the
    same file."""
    ledger = read_ledger(lesson, ledger_dir)
    if ledger.get("digest") != digest:
        ledger = {"lesson": lesson.stem, "digest": digest, "runs": {}}
    ledger["runs"][run.name] = record
    path = ledger_path(lesson, ledger_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(ledger, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


#: What a claim record keeps in the ledger (what `claim_spread` and the tests read).
CLAIM_FIELDS = ("statement", "kind", "value", "op", "threshold", "margin", "relative_margin", "held", "why")
