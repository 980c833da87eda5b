"""The sweep's statistics: per lesson and claim, its spread over the runs (`claim_spread`: lowest
and highest value, worst margin, and how many seed ranges its worst run sat from failing), the
claims that are too thin or constant without a reason, the central claim each lesson names, and the
per-lesson robustness table those make."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from .. import ROOT

#: An evidence claim's worst run must sit at least this many seed ranges from its threshold. (With 11
#: runs a range is about three standard deviations; a large effect of one sign is asserted with its
#: threshold at no more than half its worst run, CONTRIBUTING.md.)
MIN_SEED_RANGES = 1.0
#: Per lesson, the claim that answers its question (lesson, statement, why): tests/test_sweep_data.py
#: requires it to be asserted, and the robustness table (docs/results.md) names it.
CENTRAL_CSV = ROOT / "docs" / "sweep" / "central.csv"


def central_claims(path: Path = CENTRAL_CSV) -> pd.DataFrame:
    """The central claims (`docs/sweep/central.csv`): lesson, statement, why; lessons as two-digit strings."""
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    table["lesson"] = table["lesson"].str.zfill(2)
    return table


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

