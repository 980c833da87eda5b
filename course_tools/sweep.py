"""`course sweep`: every lesson at seeds 0-9, and at SEED=1 with 2 torch threads.

A claim that holds at one seed on one machine may be a coin flip. The sweep re-runs each lesson
under several seeds and once with another thread count (reductions then round differently, as
they would on another CPU), reads every `claim(...)` the evidence cells recorded (see
`course_lib.evidence`), and writes:

- `docs/sweep/runs/<lesson>.json` (committed): the run ledger. Per lesson, the code digest its runs
  were made from and, per run, its time, outcome, claims and checked-output texts. Everything below
  is derived from it, so a sweep stopped on one machine is continued on another (`--resume` skips
  the runs the ledger holds for the lesson's current code) and nothing depends on `build/`;
- `build/sweep.csv`: one row per lesson, run and claim: measured value, threshold, margin;
- `build/sweep_runs.csv`: one row per lesson and run: seconds, claims held, error;
- `docs/sweep/claims.csv` (committed): one row per lesson and claim over all the runs: its kind,
  lowest and highest value, threshold, and how many seed ranges its worst run sat from failing,
  so that the table can be checked (and the cheat sheet show ranges) without re-running;
- with `--update-readme`, the robustness table of `docs/results.md` (between `<!-- sweep:begin -->` and
  `<!-- sweep:end -->`): per lesson, the runs whose claims held, the evidence claim with the
  fewest seed ranges between its worst run and its threshold, and the count of the claims that
  are not evidence (identities, fixed-input measurements, equalities with `course_lib`);
- `docs/sweep/checked_outputs.json` (committed): per lesson and `# NBVAL_CHECK_OUTPUT` cell, the text
  each run printed there, as the ledger recorded it from the executed notebook. A checked output is
  compared character by character by nbval on whatever CPU runs the tests, so it must be an exact
  fact; a text that changes with the seed would also change with the CPU. `tests/test_checked_outputs.py`
  requires every checked cell to have printed one text in every recorded run, equal to the stored one.
"""
from __future__ import annotations

import configparser
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from tqdm.std import tqdm

from . import ROOT
from .manifest import Lesson
from .runner import BUILD, INTERRUPTED, RESULTS, execute_lesson, lesson_status, replace_readme_block

SWEEP_BEGIN, SWEEP_END = "<!-- sweep:begin -->", "<!-- sweep:end -->"


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


def _read_claims(claims_file: Path) -> list[dict]:
    if not claims_file.exists():
        return []
    return [json.loads(line) for line in claims_file.read_text(encoding="utf-8").splitlines()]


DEFAULT_RUNS = [Run(f"seed {s}", s) for s in range(10)] + [Run("seed 1, 2 threads", 1, threads=2)]

#: Where the per-claim summary over the runs is committed (see `claim_spread`).
CLAIMS_CSV = ROOT / "docs" / "sweep" / "claims.csv"
#: An evidence claim's worst run must sit at least this many seed ranges from its threshold. (With 11
#: runs a range is about three standard deviations; a large effect of one sign is asserted with its
#: threshold at no more than half its worst run, CONTRIBUTING.md.)
MIN_SEED_RANGES = 1.0
#: Per lesson, the claim that answers its question (lesson, statement, why): tests/test_sweep_data.py
#: requires it to be asserted, and the robustness table (docs/results.md) names it.
CENTRAL_CSV = ROOT / "docs" / "sweep" / "central.csv"


def central_claims(path: Path = CENTRAL_CSV) -> pd.DataFrame:
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    table["lesson"] = table["lesson"].str.zfill(2)
    return table


#: What a claim record keeps in the ledger (what `claim_spread` and the tests read).
CLAIM_FIELDS = ("statement", "kind", "value", "op", "threshold", "margin", "relative_margin", "held", "why")


def _run_one(lesson: Lesson, run: Run, out_dir: Path, timeout: int) -> tuple[str, dict | None]:
    """Run `lesson` under `run`; return (code digest, the run's ledger record), the record None
    when the run was interrupted (not a run: `--resume` runs it again)."""
    import nbformat
    output, claims_file = run.files(lesson, out_dir)
    claims_file.unlink(missing_ok=True)
    digest = code_digest(lesson)
    # The kernel inherits these: the claims file, and the thread count for torch and OpenMP.
    env = {"COURSE_CLAIMS_FILE": str(claims_file), "COURSE_TORCH_THREADS": str(run.threads),
           "OMP_NUM_THREADS": str(run.threads), "TQDM_MININTERVAL": "3600",
           # idle OpenMP threads sleep instead of spinning: same results, and a 2-thread run on a
           # busy machine no longer slows to a crawl (measured: 6 min 48 s -> 2 min for lesson 24)
           "OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0"}
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        seconds, status, error = execute_lesson(lesson, output, {"SEED": run.seed}, timeout)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    if status == INTERRUPTED or (output.exists() and lesson_status(output)[0] == INTERRUPTED):
        return digest, None
    claims = [{key: entry.get(key) for key in CLAIM_FIELDS if entry.get(key) is not None}
              for entry in _read_claims(claims_file)]
    checked = (checked_cells(nbformat.read(output, as_version=4)) if output.exists() else {})
    return digest, {"seed": run.seed, "threads": run.threads, "seconds": round(seconds, 1),
                    "claims held": status, "error": error, "claims": claims, "checked": checked}


def sweep(lessons: list[Lesson], runs: list[Run] = DEFAULT_RUNS, jobs: int = 1, timeout: int = 900,
          out_dir: Path = BUILD / "sweep", checked_file: Path | None = None,
          claims_csv: Path | None = CLAIMS_CSV, resume: bool = False,
          ledger_dir: Path = RUNS_DIR) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run every lesson under every run (executed notebooks in `out_dir`), record each run in the
    lesson's ledger as it ends, then `collect`: return (runs table, claims table) and write both
    CSVs, the swept lessons' rows of the committed per-claim summary `claims_csv`
    (`write_claims_csv`) and their checked outputs into `checked_file` (default
    `docs/sweep/checked_outputs.json`; see `write_checked_outputs`).

    Environment variables are process-wide, so parallel jobs would race on them: the kernel is
    started while they are set, so jobs > 1 runs lessons in separate worker processes.

    The work goes run by run (every lesson at the first run, then every lesson at the next), so
    an interrupted sweep has the first runs of every lesson; `resume` skips the runs the ledger
    holds from the lesson's current code (`is_current`), so a sweep can be continued where it
    stopped, on this machine or another (the ledger is committed).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    work = [(lesson, run) for run in runs for lesson in lessons]
    if resume:
        digests = {lesson.stem: code_digest(lesson) for lesson in lessons}
        work = [(lesson, run) for lesson, run in work
                if not is_current(lesson, run, ledger_dir, digests[lesson.stem])]
    bar = tqdm(total=len(work), desc="sweep", unit="run")

    def keep(lesson, run, result):
        digest, record = result
        # a run of code edited while it ran is stale on arrival: recording it would start the
        # ledger afresh and drop the runs already made from the newer code
        if record is not None and digest == code_digest(lesson):
            record_run(lesson, run, digest, record, ledger_dir)
        bar.update()

    if jobs <= 1:
        for lesson, run in work:
            keep(lesson, run, _run_one(lesson, run, out_dir, timeout))
    else:
        from concurrent.futures import ProcessPoolExecutor
        import multiprocessing
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures = [(lesson, run, pool.submit(_run_one, lesson, run, out_dir, timeout)) for lesson, run in work]
            for lesson, run, future in futures:
                keep(lesson, run, future.result())
    bar.close()
    return collect(lessons, runs, ledger_dir, checked_file, claims_csv)


def _kind(group: pd.DataFrame) -> str:
    """The kind the claim was declared as (its last run's); runs recorded before kinds existed
    count as evidence, and `claim_close`'s parity checks as equality."""
    if "kind" in group.columns:
        kinds = group["kind"].dropna()
        if len(kinds):
            return str(kinds.iloc[-1])
    return "equality" if str(group["statement"].iloc[0]).endswith("(largest difference)") else "evidence"


def claim_spread(claims_table: pd.DataFrame) -> pd.DataFrame:
    """Per lesson and claim, over the runs: kind, lowest/highest value, worst margin, and that
    margin in units of the seed-to-seed range ("seed ranges": how many ranges away from failing
    the worst run was; infinite when the value never moved)."""
    rows = []
    for (lesson, statement), group in claims_table.groupby(["lesson", "statement"], sort=False):
        why = group["why"].dropna() if "why" in group.columns else pd.Series([], dtype=str)
        kind = _kind(group)
        # runs, not entries: a statement made twice in one run (a loop) is one run's claim
        by_run = group.groupby("run")["held"] if "run" in group.columns else None
        runs = by_run.ngroups if by_run is not None else len(group)
        held_runs = (int(by_run.apply(lambda held: held.astype(bool).all()).sum()) if by_run is not None
                     else int(group["held"].astype(bool).sum()))
        if kind == "reported":   # shown, not claimed: its range only, no threshold to be far from
            rows.append({"lesson": lesson, "statement": statement, "kind": kind, "runs": runs,
                         "held": runs, "min": group["value"].min(), "max": group["value"].max(),
                         "op": "", "threshold": math.nan, "worst margin": math.nan,
                         "relative margin": math.nan, "seed ranges": math.nan, "worst run": "",
                         "why": str(why.iloc[-1]) if len(why) else ""})
            continue
        worst = group.loc[group["margin"].idxmin()]
        spread = group["value"].max() - group["value"].min()
        rows.append({"lesson": lesson, "statement": statement, "kind": kind,
                     "runs": runs, "held": held_runs,
                     "min": group["value"].min(), "max": group["value"].max(), "op": worst["op"],
                     "threshold": worst["threshold"], "worst margin": worst["margin"],
                     "relative margin": worst["relative_margin"],
                     "seed ranges": (worst["margin"] / spread if spread > 0
                                     else (float("inf") if worst["margin"] >= 0 else float("-inf"))),
                     "worst run": worst["run"], "why": str(why.iloc[-1]) if len(why) else ""})
    return pd.DataFrame(rows)


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


def undeclared_constants(spread: pd.DataFrame) -> pd.DataFrame:
    """Evidence claims whose value never moved over the runs and that say nothing about why: each
    must be declared an identity (fixed by construction) or a deterministic measurement, or carry a
    one-line reason (`why=`, e.g. "a trained error rate at its floor: 0 errors in every run")."""
    why = spread["why"].fillna("").astype(str).str.strip() if "why" in spread.columns else ""
    return spread[(spread["kind"] == "evidence") & (spread["max"] == spread["min"]) & (why == "")]


def thin_claims(spread: pd.DataFrame, minimum: float = MIN_SEED_RANGES) -> pd.DataFrame:
    """Evidence claims whose worst run sits fewer than `minimum` seed ranges from the threshold."""
    evidence = spread[spread["kind"] == "evidence"]
    return evidence[evidence["seed ranges"] < minimum]


def robustness_table(runs_table: pd.DataFrame, claims_table: pd.DataFrame) -> pd.DataFrame:
    """Per lesson: runs whose claims held; evidence claims and the other kinds counted apart; the
    thinnest evidence claim: the one whose worst run sits the fewest seed ranges from its
    threshold, with its range over the runs and its threshold."""
    spread = claim_spread(claims_table) if len(claims_table) else pd.DataFrame()
    central_table = central_claims() if CENTRAL_CSV.exists() else None
    _central = dict(zip(central_table["lesson"], central_table["statement"])) if central_table is not None else {}
    rows = []
    for (lesson, lesson_id), group in runs_table.groupby(["lesson", "id"], sort=True):
        held = int((group["claims held"] == "yes").sum())
        mine = spread[spread["lesson"] == lesson] if len(spread) else spread
        kinds = mine["kind"].value_counts() if len(mine) else pd.Series(dtype=int)
        row = {"lesson": lesson, "id": lesson_id, "runs held": f"{held}/{len(group)}",
               "evidence": int(kinds.get("evidence", 0)),
               "identities": int(kinds.get("identity", 0)),
               "fixed input": int(kinds.get("deterministic", 0)),
               "equalities": int(kinds.get("equality", 0)),
               "reported": int(kinds.get("reported", 0))}
        central = _central.get(lesson)
        if central is not None and len(mine) and (mine["statement"] == central).any():
            found = mine[mine["statement"] == central].iloc[0]
            row["central claim (asserted)"] = (f"{central[:60]}: {found['min']:.3g} – {found['max']:.3g} "
                                               f"{found['op']} {found['threshold']:.3g}"
                                               + (f" ({found['kind']})" if found["kind"] != "evidence" else ""))
        else:
            row["central claim (asserted)"] = "(none named)"
        effects = mine[mine["kind"] == "evidence"] if len(mine) else mine
        if len(effects):
            thinnest = effects.loc[effects["seed ranges"].idxmin()]
            row["thinnest evidence claim"] = str(thinnest["statement"])[:70]
            row["measured (all runs)"] = f"{thinnest['min']:.3g} – {thinnest['max']:.3g}"
            row["threshold"] = f"{thinnest['op']} {thinnest['threshold']:.3g}"
            ratio = thinnest["seed ranges"]
            row["seed ranges to threshold"] = ("∞ (no spread)" if ratio == float("inf")
                                               else f"{ratio:.1f}")
        else:
            row.update({"thinnest evidence claim": "(no evidence claims)", "measured (all runs)": "",
                        "threshold": "", "seed ranges to threshold": ""})
        rows.append(row)
    return pd.DataFrame(rows)


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


# --- checked outputs -------------------------------------------------------------------------

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
