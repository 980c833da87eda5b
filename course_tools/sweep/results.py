"""The sweep's results: the files derived from the ledger, running nothing (`collect`):
`build/sweep.csv` (per lesson, run and claim), `build/sweep_runs.csv` (per lesson and run), the
committed per-claim summary `docs/sweep/claims.csv` and the checked outputs; and the robustness
table of `docs/results.md` (`update_readme`)."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from .. import ROOT
from ..manifest import Lesson
from ..runner import BUILD, RESULTS, replace_readme_block
from .checked_outputs import write_checked_outputs
from .ledger import DEFAULT_RUNS, RUNS_DIR, Run, current_runs
from .statistics import MIN_SEED_RANGES, claim_spread

SWEEP_BEGIN, SWEEP_END = "<!-- sweep:begin -->", "<!-- sweep:end -->"

#: Where the per-claim summary over the runs is committed (see `claim_spread`).
CLAIMS_CSV = ROOT / "docs" / "sweep" / "claims.csv"


def write_claims_csv(claims_table: pd.DataFrame, path: Path = CLAIMS_CSV) -> pd.DataFrame:
    """Merge the claim spread of the lessons in `claims_table` into the committed `path` (the
    lessons swept replace their rows; the others keep theirs). Returns the whole table."""
    spread = claim_spread(claims_table) if len(claims_table) else pd.DataFrame()
    if path.exists():
        old = pd.read_csv(path, dtype={"lesson": str}, keep_default_na=False)
        old = old[~old["lesson"].isin(set(spread["lesson"]) if len(spread) else set())]
        spread = pd.concat([old, spread], ignore_index=True) if len(spread) else old
    spread = spread.sort_values(["lesson"], kind="stable").reset_index(drop=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    spread.to_csv(path, index=False, float_format="%.6g")
    return spread


def load_claims_csv(path: Path = CLAIMS_CSV) -> pd.DataFrame:
    """The committed per-claim summary (see `write_claims_csv`), lessons as two-digit strings."""
    table = pd.read_csv(path, dtype={"lesson": str, "why": str}, keep_default_na=False)
    table["lesson"] = table["lesson"].str.zfill(2)
    for column in ("min", "max"):
        table[column] = pd.to_numeric(table[column])
    for column in ("threshold", "worst margin", "relative margin", "seed ranges"):   # empty when reported
        table[column] = pd.to_numeric(table[column].replace("", math.nan))
    return table


def collect(lessons: list[Lesson], runs: list[Run] = DEFAULT_RUNS, ledger_dir: Path = RUNS_DIR,
            checked_file: Path | None = None,
            claims_csv: Path | None = CLAIMS_CSV) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rebuild the tables from the ledger, running nothing: the runs of `runs` it holds for each
    lesson's current code (runs of older code are stale and left out). Lessons with no current run
    are left out of the tables, and keep their rows of `claims_csv` and their checked outputs."""
    summaries, claims = [], []
    for lesson in lessons:
        held = current_runs(lesson, ledger_dir)
        if not held:
            continue
        for run in runs:
            base = {"lesson": f"{lesson.number:02d}", "id": lesson.id, "run": run.name}
            record = held.get(run.name)
            if record is None:
                summaries.append({**base, "seconds": float("nan"), "claims held": "not run",
                                  "claims recorded": 0, "error": ""})
                continue
            summaries.append({**base, "seconds": record["seconds"], "claims held": record["claims held"],
                              "claims recorded": len(record["claims"]), "error": record["error"]})
            claims.extend({**base, **entry} for entry in record["claims"])
    runs_table, claims_table = pd.DataFrame(summaries), pd.DataFrame(claims)
    BUILD.mkdir(exist_ok=True)
    runs_table.to_csv(BUILD / "sweep_runs.csv", index=False)
    claims_table.to_csv(BUILD / "sweep.csv", index=False)
    write_checked_outputs(lessons, runs, ledger_dir, checked_file)
    if claims_csv is not None and len(claims_table):
        write_claims_csv(claims_table, claims_csv)
    return runs_table, claims_table


def _readme_rows(readme: Path) -> pd.DataFrame:
    """The robustness table now in `readme` (docs/results.md), as text cells (empty when there is none)."""
    text = readme.read_text(encoding="utf-8")
    if SWEEP_BEGIN not in text:
        return pd.DataFrame()
    block = text.split(SWEEP_BEGIN, 1)[1].split(SWEEP_END, 1)[0]
    lines = [line for line in block.splitlines() if line.startswith("|")]
    if len(lines) < 3:
        return pd.DataFrame()
    header = [cell.strip() for cell in lines[0].strip().strip("|").split("|")]
    rows = []
    for line in lines[2:]:
        cells = [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
        if len(cells) > len(header):   # a statement with an unescaped "|" (tables written before escaping)
            at, extra = header.index("thinnest evidence claim"), len(cells) - len(header)
            cells[at:at + extra + 1] = ["|".join(cells[at:at + extra + 1])]
        rows.append(cells)
    return pd.DataFrame(rows, columns=header)


def update_readme(table: pd.DataFrame, runs: list[Run], readme: Path = RESULTS) -> None:
    """Write the robustness table into docs/results.md: the lessons in `table` replace their rows,
    the others keep the rows a sweep wrote before (a sweep of some lessons leaves the rest)."""
    table = table.astype(str).replace("nan", "")
    old = _readme_rows(readme)
    if len(old) and list(old.columns) == list(table.columns):
        kept = old[~old["lesson"].isin(set(table["lesson"]))]
        table = pd.concat([kept, table], ignore_index=True).sort_values("lesson", kind="stable")
    names = ", ".join(run.name for run in runs)
    table = table.apply(lambda column: column.str.replace("|", "\\|", regex=False))   # "|x|" in a statement
    body = (table.to_markdown(index=False, disable_numparse=True)
            + f"\n\nRuns: {names}. Evidence: claims about a measurement that could have come out "
            f"otherwise; identities (fixed by construction), fixed-input measurements (of MiniLM's "
            f"weights, of a formula: no seed moves them) and equalities with `course_lib` are counted "
            f"apart and never ranked. Thinnest evidence claim: the one whose worst run sits the fewest "
            f"seed ranges from its threshold (distance from failing ÷ the claim's range over the "
            f"runs; the course asks for at least {MIN_SEED_RANGES:g}, and a large effect of one sign "
            f"is claimed at no more than half its worst run). Central claim: the comparison that "
            f"answers the lesson's question (`docs/sweep/central.csv`), asserted. Generated by `make sweep` from "
            f"the run ledger `docs/sweep/runs/`; per-claim data in `docs/sweep/claims.csv`.")
    replace_readme_block(SWEEP_BEGIN, SWEEP_END, body, readme)

