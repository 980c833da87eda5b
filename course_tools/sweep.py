"""`course sweep`: every lesson at seeds 0-4, and at SEED=1 with 2 torch threads.

A claim that holds at one seed on one machine may be a coin flip. The sweep re-runs each lesson
under several seeds and once with another thread count (reductions then round differently, as
they would on another CPU), reads every `claim(...)` the evidence cells recorded (see
`course_lib.evidence`), and writes:

- `build/sweep.csv`: one row per lesson, run and claim: measured value, threshold, margin;
- `build/sweep_runs.csv`: one row per lesson and run: seconds, claims held, error;
- with `--update-readme`, the README's robustness table (between `<!-- sweep:begin -->` and
  `<!-- sweep:end -->`): per lesson, the runs whose claims held and the thinnest margin.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from tqdm.std import tqdm

from . import ROOT
from .manifest import Lesson
from .runner import BUILD, execute_lesson, lesson_status, replace_readme_block

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


def _read_claims(claims_file: Path) -> list[dict]:
    if not claims_file.exists():
        return []
    return [json.loads(line) for line in claims_file.read_text(encoding="utf-8").splitlines()]


DEFAULT_RUNS = [Run(f"seed {s}", s) for s in range(5)] + [Run("seed 1, 2 threads", 1, threads=2)]


def _run_one(lesson: Lesson, run: Run, out_dir: Path, timeout: int) -> tuple[dict, list[dict]]:
    output, claims_file = run.files(lesson, out_dir)
    claims_file.unlink(missing_ok=True)
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
    claims = _read_claims(claims_file)
    base = {"lesson": f"{lesson.number:02d}", "id": lesson.id, "run": run.name}
    summary = {**base, "seconds": round(seconds, 1), "claims held": status,
               "claims recorded": len(claims), "error": error}
    return summary, [{**base, **claim} for claim in claims]


def sweep(lessons: list[Lesson], runs: list[Run] = DEFAULT_RUNS, jobs: int = 1, timeout: int = 900,
          out_dir: Path = BUILD / "sweep") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run every lesson under every run; return (runs table, claims table) and write both CSVs.

    Environment variables are process-wide, so parallel jobs would race on them: the kernel is
    started while they are set, so jobs > 1 runs lessons in separate worker processes.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    work = [(lesson, run) for lesson in lessons for run in runs]
    summaries, claims = [], []
    bar = tqdm(total=len(work), desc="sweep", unit="run")
    if jobs <= 1:
        for lesson, run in work:
            summary, found = _run_one(lesson, run, out_dir, timeout)
            summaries.append(summary)
            claims.extend(found)
            bar.update()
    else:
        from concurrent.futures import ProcessPoolExecutor
        import multiprocessing
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures = [pool.submit(_run_one, lesson, run, out_dir, timeout) for lesson, run in work]
            for future in futures:
                summary, found = future.result()
                summaries.append(summary)
                claims.extend(found)
                bar.update()
    bar.close()
    runs_table = pd.DataFrame(summaries)
    claims_table = pd.DataFrame(claims)
    BUILD.mkdir(exist_ok=True)
    runs_table.to_csv(BUILD / "sweep_runs.csv", index=False)
    claims_table.to_csv(BUILD / "sweep.csv", index=False)
    return runs_table, claims_table


def claim_spread(claims_table: pd.DataFrame) -> pd.DataFrame:
    """Per lesson and claim, over the runs: lowest/highest value, worst margin, and that margin
    in units of the seed-to-seed range (how many ranges away from failing the worst run was)."""
    rows = []
    for (lesson, statement), group in claims_table.groupby(["lesson", "statement"], sort=False):
        worst = group.loc[group["relative_margin"].idxmin()]
        spread = group["value"].max() - group["value"].min()
        rows.append({"lesson": lesson, "statement": statement, "runs": len(group),
                     "held": int(group["held"].sum()), "min": group["value"].min(),
                     "max": group["value"].max(), "op": worst["op"], "threshold": worst["threshold"],
                     "worst margin": worst["margin"], "relative margin": worst["relative_margin"],
                     "margin / spread": worst["margin"] / spread if spread > 0 else float("inf"),
                     "worst run": worst["run"]})
    return pd.DataFrame(rows)


def robustness_table(runs_table: pd.DataFrame, claims_table: pd.DataFrame) -> pd.DataFrame:
    """Per lesson: runs whose claims held, claims per run, and the thinnest claim over all runs
    (smallest relative margin), with the range of its value over the runs."""
    spread = claim_spread(claims_table) if len(claims_table) else pd.DataFrame()
    rows = []
    for (lesson, lesson_id), group in runs_table.groupby(["lesson", "id"], sort=True):
        held = int((group["claims held"] == "yes").sum())
        row = {"lesson": lesson, "id": lesson_id, "runs held": f"{held}/{len(group)}",
               "claims": int(group["claims recorded"].max())}
        mine = spread[spread["lesson"] == lesson] if len(spread) else spread
        # Equalities with the library (claim_close) sit at margin 0 when exact: they are checks of
        # the build, not effects with a seed spread, so the thinnest claim is sought among the rest.
        effects = mine[~mine["statement"].str.endswith("(largest difference)")] if len(mine) else mine
        mine = effects if len(effects) else mine
        if len(mine):
            thinnest = mine.loc[mine["relative margin"].idxmin()]
            row["thinnest claim"] = str(thinnest["statement"])[:70]
            row["measured (all runs)"] = f"{thinnest['min']:.3g} – {thinnest['max']:.3g}"
            row["threshold"] = f"{thinnest['op']} {thinnest['threshold']:.3g}"
            row["relative margin"] = f"{thinnest['relative margin']:.2f}"
            ratio = thinnest["margin / spread"]
            row["margin / seed range"] = "∞ (no spread)" if ratio == float("inf") else f"{ratio:.1f}"
        else:
            row.update({"thinnest claim": "(no recorded claims)", "measured (all runs)": "",
                        "threshold": "", "relative margin": "", "margin / seed range": ""})
        rows.append(row)
    return pd.DataFrame(rows)


def collect(lessons: list[Lesson], runs: list[Run] = DEFAULT_RUNS,
            out_dir: Path = BUILD / "sweep") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rebuild the tables from the executed notebooks and claim files a sweep left in `out_dir`
    (for lessons swept one at a time), without running anything."""
    summaries, claims = [], []
    for lesson in lessons:
        for run in runs:
            output, claims_file = run.files(lesson, out_dir)
            status, error = lesson_status(output) if output.exists() else ("not run", "")
            found = _read_claims(claims_file)
            base = {"lesson": f"{lesson.number:02d}", "id": lesson.id, "run": run.name}
            summaries.append({**base, "seconds": float("nan"), "claims held": status,
                              "claims recorded": len(found), "error": error})
            claims.extend({**base, **entry} for entry in found)
    runs_table, claims_table = pd.DataFrame(summaries), pd.DataFrame(claims)
    runs_table.to_csv(BUILD / "sweep_runs.csv", index=False)
    claims_table.to_csv(BUILD / "sweep.csv", index=False)
    return runs_table, claims_table


def update_readme(table: pd.DataFrame, runs: list[Run], readme: Path = ROOT / "README.md") -> None:
    names = ", ".join(run.name for run in runs)
    body = (table.to_markdown(index=False)
            + f"\n\nRuns: {names}. Thinnest claim: the one closest to failing in any run. Relative "
            f"margin: its distance from failing divided by the threshold (0.5: half the threshold "
            f"away). Margin / seed range: that distance in units of the claim's range over the runs "
            f"(how many seed-to-seed spreads away from failing). Generated by `make sweep`; "
            f"per-claim values in `build/sweep.csv`.")
    replace_readme_block(SWEEP_BEGIN, SWEEP_END, body, readme)
