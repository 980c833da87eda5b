"""The interview cheat sheet: one page, every lesson, generated from the notebooks and the sweep.

Nothing here is typed twice. Per lesson (in manifest order) the sheet takes

- the question in English and Chinese from `course_tools.manifest`;
- the `## The short answer` cell and the `## 中文简答` cell of the stored notebook;
- the claims of the evidence cell as measured by `course sweep` (`build/sweep.csv`): per claim the
  smallest and largest value over all sweep runs, the claimed bound and how many runs held;
- one line on the usual answer from the `## Pitfalls` cell: the bullet marked with
  `<!-- cheatsheet -->` if there is one, else the first bullet (its bold lead and the sentence after).

`course cheatsheet` writes `build/cheatsheet.md`; `course site` puts the same page in the website.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

from . import ROOT
from .manifest import LESSONS, Lesson

SWEEP_CSV = ROOT / "build" / "sweep.csv"
SHORT_ANSWER = "## The short answer"
SHORT_ANSWER_ZH = "## 中文简答"
PITFALLS = "## Pitfalls"
MARKER = "<!-- cheatsheet -->"
#: Claims that compare a piece built in the open with its course_lib twin (claim_close): parity,
#: not a measured answer; the sheet counts them but does not list them.
PARITY_SUFFIX = "(largest difference)"


def _cells(lesson: Lesson) -> list[str]:
    notebook = nbformat.read(lesson.notebook, as_version=4)
    return [cell.source for cell in notebook.cells if cell.cell_type == "markdown"]


def section(lesson: Lesson, heading: str) -> str | None:
    """The body of the markdown cell that starts with `heading` (heading line removed), or None."""
    for source in _cells(lesson):
        first, _, body = source.strip().partition("\n")
        if first.strip().startswith(heading):
            return body.strip()
    return None


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def common_answer_line(lesson: Lesson) -> str | None:
    """One line on the usual answer: the marked bullet of the Pitfalls cell, else its first bullet.

    From the bullet: its bold lead and the sentence that follows it (the correction), shortened to
    about two lines.
    """
    body = section(lesson, PITFALLS)
    if not body:
        return None
    bullets = [b for b in re.split(r"\n(?=- )", body) if b.startswith("- ")]
    if not bullets:
        return None
    marked = [b for b in bullets if MARKER in b]
    bullet = _one_line((marked or bullets)[0].replace(MARKER, "")[2:])
    bold = re.match(r"\*\*(.+?)\*\*(.*)", bullet)
    if not bold:
        sentence = re.match(r"(.+?[.!?])(\s|$)", bullet)
        return sentence.group(1) if sentence else bullet
    lead, rest = bold.group(1), bold.group(2).strip()
    follow = ""
    for sentence in re.findall(r".+?[.!?](?:\s|$)|.+$", rest):
        follow += sentence
        if len(follow.strip()) >= 40:  # "(the seed write-up)." alone is not the correction
            break
    return f"**{lead}** {_shorten(follow.strip())}".strip()


def _shorten(text: str, limit: int = 240) -> str:
    """At most `limit` characters, cut at a clause boundary and marked with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    for mark in ("; ", ": ", ", ", " — ", " "):
        if mark in cut[limit // 2:]:
            cut = cut[:cut.rindex(mark)].rstrip(" ,;:—")
            break
    for fence in ("$", "`", "**"):  # never leave math, code or bold open
        if cut.count(fence) % 2:
            cut = cut[:cut.rindex(fence)].rstrip(" ,;:—(")
    return cut + " …"


def _number(value: float) -> str:
    if value != value:  # NaN
        return "nan"
    if abs(value) >= 1e5 or (value != 0 and abs(value) < 1e-3):
        return f"{value:.2e}"
    return f"{value:.3g}"


def load_sweep(path: Path = SWEEP_CSV):
    """The sweep's per-claim table, or None when `course sweep` has not written one."""
    import pandas as pd
    if not path.exists() or path.stat().st_size == 0:
        return None
    try:
        table = pd.read_csv(path, dtype={"lesson": str})
    except pd.errors.EmptyDataError:
        return None
    if table.empty or "statement" not in table.columns:
        return None
    table["lesson"] = table["lesson"].str.zfill(2)
    return table


def claim_lines(lesson: Lesson, sweep) -> list[str]:
    """Per claim of the lesson: 'statement: min–max over N runs (claimed op threshold), k/N held'."""
    if sweep is None:
        return ["*sweep not run* — `make sweep` (or `course sweep --only "
                f"{lesson.number:02d}`) writes `build/sweep.csv`"]
    rows = sweep[sweep["lesson"] == f"{lesson.number:02d}"]
    if rows.empty:
        return ["*sweep not run for this lesson* — `course sweep --only "
                f"{lesson.number:02d}`"]
    runs = rows["run"].nunique()
    lines, parity = [], 0
    for statement, group in rows.groupby("statement", sort=False):
        if statement.endswith(PARITY_SUFFIX):
            parity += 1
            continue
        low, high = group["value"].min(), group["value"].max()
        measured = _number(low) if _number(low) == _number(high) else f"{_number(low)}–{_number(high)}"
        held = int(group["held"].astype(str).str.lower().eq("true").sum())
        threshold = group["threshold"].iloc[0]
        lines.append(f"{statement}: **{measured}** (claimed {group['op'].iloc[0]} {_number(threshold)}; "
                     f"held in {held}/{len(group)} runs)")
    if parity:
        lines.append(f"{parity} parity check(s) of a piece built in the open against `course_lib`")
    if not lines:
        lines.append("no claims recorded")
    lines.insert(0, f"over {runs} sweep runs:")
    return lines


def _demote_headings(text: str) -> str:
    return re.sub(r"^#+\s*(.+)$", r"**\1**", text, flags=re.M)


def render(link_base: str = "../notebooks/", sweep_path: Path = SWEEP_CSV,
           lessons: list[Lesson] | None = None, title_level: int = 1) -> str:
    """The sheet as markdown. `link_base` prefixes each lesson's notebook file name in its link."""
    lessons = LESSONS if lessons is None else lessons
    sweep = load_sweep(sweep_path)
    h = "#" * title_level
    out = [f"{h} Interview cheat sheet", "",
           "Generated by `course cheatsheet` from the lesson notebooks (short answers, pitfalls) and "
           "`build/sweep.csv` (the measured ranges over seeds 0–9 and seed 1 with 2 threads); "
           "do not edit by hand.", ""]
    if sweep is None:
        out += ["> The seed sweep has not been run on this checkout: measured ranges read "
                "*sweep not run*. Run `make sweep`, then rebuild.", ""]
    for lesson in lessons:
        link = f"{link_base}{lesson.stem}.ipynb"
        out += [f"{h}# {lesson.number:02d} · {lesson.question}", "",
                f"**中文：** {lesson.question_zh} · [lesson {lesson.number:02d}]({link})", ""]
        if not lesson.notebook.exists():
            out += ["*notebook missing*", ""]
            continue
        answer = section(lesson, SHORT_ANSWER)
        answer_zh = section(lesson, SHORT_ANSWER_ZH)
        out += [f"**Short answer.** {_demote_headings(answer) if answer else '*missing*'}", ""]
        out += [f"**中文简答。** {_demote_headings(answer_zh) if answer_zh else '*（尚未撰写）*'}", ""]
        claims = claim_lines(lesson, sweep)
        out += [f"**Measured** {claims[0]}", ""] + [f"- {line}" for line in claims[1:]]
        if len(claims) > 1:
            out.append("")
        line = common_answer_line(lesson)
        if line:
            out += [f"**The usual answer, corrected:** {line}", ""]
    return "\n".join(out).rstrip() + "\n"


def write(path: Path = ROOT / "build" / "cheatsheet.md") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(), encoding="utf-8")
    return path
