"""The `course` command: run lessons, grade exercises, open the lab."""
from __future__ import annotations

import argparse
import sys

# This module builds the parser and dispatches (`main`, the `course` entry point); what each command
# does is course_tools/commands.py.
from .commands import (cmd_bench, cmd_check, cmd_cheatsheet, cmd_exercises, cmd_grade, cmd_grade_class, cmd_gradescope,
                       cmd_interview, cmd_lab, cmd_list, cmd_progress, cmd_run, cmd_site, cmd_start, cmd_store,
                       cmd_sweep)


# `course --help`: the commands in three groups, one line each (the order of each group's list)
GROUPS = {
    "learner": {
        "list": "the lessons and their interview questions",
        "lab": "open JupyterLab at the lesson map (notebooks/00_welcome.ipynb)",
        "start": "copy lesson NN's exercise into work/ (yours) and say how to open it",
        "check": "self-check exercises in a fresh kernel: one PASS or FAIL per check",
        "grade": "grade an exercise (a lesson number: your copy in work/, else exercises/)",
        "progress": "your last score per exercise and the lessons run so far",
        "interview": "a mock interview in the terminal (also --rapid, --whiteboard)",
        "cheatsheet": "write the interview cheat sheet to build/cheatsheet.md",
    },
    "instructor": {
        "grade-class": "grade a folder of submissions into a CSV gradebook (LMS rosters and imports)",
        "gradescope": "build a Gradescope autograder bundle for lesson NN's exercise",
        "exercises": "generate exercises/ from solutions/ (never overwrites edits)",
        "site": "build the course website into build/site (needs the site extra)",
    },
    "maintainer": {
        "run": "execute lessons, check every claim; write build/summary.md (`make course`)",
        "sweep": "run lessons at seeds 0-9 and seed 1 with 2 threads; write build/sweep.csv",
        "store": "execute lessons in place, storing their outputs",
        "bench": "course BERT vs Hugging Face speed ratios; write build/bench.csv",
    },
}


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def _grouped_help(sub) -> str:
    names = list(sub.choices)
    grouped = {n for group in GROUPS.values() for n in group}
    groups = {**GROUPS, "other": {n: "" for n in names if n not in grouped}}   # none (tests/test_cli_help.py)
    width = max(map(len, names)) + 2
    lines = []
    for group, commands in groups.items():
        if commands:
            lines.append(f"{group} commands:")
            lines += [f"  {name:{width}}{line}".rstrip() for name, line in commands.items()]
            lines.append("")
    return "\n".join(lines).rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="course", usage="course COMMAND [options]",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="`course COMMAND --help` shows a command's options.")
    # the commands are listed in groups (_grouped_help); each one's own --help shows its description
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help=argparse.SUPPRESS,
                                prog="course")
    p = sub.add_parser("run", description="execute lessons with papermill; write build/summary.md")
    p.add_argument("--only", nargs="*", help="lesson numbers or ids")
    p.add_argument("--seed", type=int, default=None, help="override every lesson's SEED")
    p.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    p.add_argument("--jobs", type=int, default=None, help="lessons run at a time, each in its own "
                   "process with one thread (default: 2, or 1 with --update-readme, never more than the cores; "
                   "the lessons that pretrain the tiny BERT run one after another; the longest jobs start first)")
    p.add_argument("--update-readme", action="store_true", help="write the timing table of docs/results.md "
                   "(each lesson timed alone: one job)")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("sweep", description="run lessons at seeds 0-9 and with 2 threads; write build/sweep.csv")
    p.add_argument("--only", nargs="*", help="lesson numbers or ids")
    p.add_argument("--seeds", nargs="*", type=int, default=None, help="instead of 0-9 (+ 1 with 2 threads)")
    p.add_argument("--threads-run", action="store_true", help="with --seeds: add a 2-thread run")
    p.add_argument("--jobs", type=int, default=1, help="lessons run in parallel (worker processes)")
    p.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    p.add_argument("--update-readme", action="store_true", help="write the robustness table of docs/results.md")
    p.add_argument("--collect", action="store_true",
                   help="run nothing: rebuild the tables from the run ledger docs/sweep/runs/")
    p.add_argument("--resume", action="store_true",
                   help="skip the runs the ledger holds for each lesson's current code (continue a sweep, on any machine)")
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser("interview", description="a mock interview in the terminal: each lesson's questions, "
                       "answers checked against the sweep, wrong ones back sooner (build/interview.jsonl)")
    p.add_argument("--lesson", default=None, help="only this lesson (a number or id)")
    p.add_argument("--all", action="store_true", help="every lesson, not only those run so far")
    p.add_argument("--lang", choices=["en", "zh"], default="en")
    p.add_argument("--n", type=int, default=10, help="how many questions (default 10)")
    p.add_argument("--in-order", action="store_true", help="choice options in their stored order (for "
                   "scripts; by default each question shows them in a fresh order)")
    p.add_argument("--rapid", action="store_true", help="rapid fire: the standard interview questions "
                   "in random order, each answered in one line, then its one-line answer (not recorded)")
    p.add_argument("--whiteboard", nargs="?", const="any", choices=["sdpa", "mha", "mlm", "any"], metavar="TASK",
                   help="a timed whiteboard drill graded on hidden cases: sdpa (attention with a padding mask), "
                   "mha (masked multi-head attention), mlm (BERT's masking); none: the interviewer picks. Writes "
                   "work/whiteboard/TASK.py, grades it when you press Enter (build/whiteboard.jsonl)")
    p.add_argument("--grade", action="store_true", help="with --whiteboard: grade work/whiteboard/TASK.py now "
                   "(the clock started by --whiteboard TASK keeps running until then)")
    p.add_argument("--store-cells", action="store_true", help="for authors: write each lesson's "
                   "'Check yourself' cells (and their output) from its metadata.course.interview")
    p.set_defaults(func=cmd_interview)
    p = sub.add_parser("bench", description="course BERT vs Hugging Face speed ratios; write build/bench.csv")
    p.add_argument("--quick", action="store_true", help="a tiny random BERT and small shapes (seconds)")
    p.add_argument("--out", default=None, help="the CSV (default build/bench.csv)")
    p.add_argument("--update-readme", action="store_true", help="write the speed table of docs/results.md "
                   "(with --busy: the busy-machine table beside it)")
    p.add_argument("--runs", type=_positive_int, default=1, metavar="N", help="time lesson 25's paths at 1 x 128 "
                   "in N separate interleaved runs; the table shows the slowest and fastest run")
    p.add_argument("--busy", type=int, default=0, metavar="N", help="time the table quiet and with N "
                   "background processes burning cores; report busy / quiet per row (build/bench-busy.csv)")
    p.set_defaults(func=cmd_bench)
    p = sub.add_parser("store", description="execute lessons in place, storing their outputs")
    p.add_argument("--only", nargs="*")
    p.add_argument("--timeout", type=int, default=600)
    p.set_defaults(func=cmd_store)
    p = sub.add_parser("grade", description="grade an exercise notebook (a lesson number: your copy in work/, "
                       "else exercises/)")
    p.add_argument("path", help="a lesson number (01), an id, or a notebook's path")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--cell-timeout", type=float, default=60.0, help="CPU seconds per cell (the "
                   "learner process's; 4x as much wall-clock time ends one that only waits)")
    p.add_argument("--item-timeout", type=float, default=None, help="CPU seconds per graded item "
                   "(default: the cell timeout)")
    p.set_defaults(func=cmd_grade)
    p = sub.add_parser("grade-class", description="grade a folder of submissions into a CSV gradebook")
    p.add_argument("submissions", help="one sub-folder or one notebook per student")
    p.add_argument("--out", default="grades.csv", help="the CSV; the histogram goes next to it (.png)")
    p.add_argument("--jobs", type=int, default=None, help="parallel graders (default: the core count)")
    p.add_argument("--cell-timeout", type=float, default=60.0)
    p.add_argument("--item-timeout", type=float, default=None)
    p.add_argument("--roster", default=None, help="a CSV of the class (Canvas or Moodle export, or any CSV "
                   "with a student ID column): rows get its IDs and names; students without a submission "
                   "get a 'missing' row")
    p.add_argument("--id-column", default=None, help="the roster's student ID column (default: the first "
                   "of ID, Identifier, SIS User ID, Student ID, student_id, id, Username, Email address, ...)")
    p.add_argument("--seed", type=int, default=None, help="the hidden cases' seed (recorded in every row; "
                   "the same seed regrades to the same points); default: a fresh one")
    p.add_argument("--format", dest="formats", action="append", default=[], choices=["canvas", "moodle"],
                   help="also write an LMS import file: canvas (GRADES_canvas.csv) or moodle (one grading "
                   "worksheet per lesson, GRADES_moodle_NN.csv); repeatable")
    p.set_defaults(func=cmd_grade_class)
    p = sub.add_parser("gradescope", description="build a Gradescope autograder bundle for lesson NN's exercise")
    p.add_argument("lesson", help="a lesson number (01) or id")
    p.add_argument("--out", default="autograder.zip", help="the zip to upload to Gradescope")
    p.add_argument("--visibility", default="visible",
                   choices=["visible", "hidden", "after_due_date", "after_published"],
                   help="when students see the per-item results (Gradescope's test visibility)")
    p.add_argument("--wheelhouse", default=None, help="a folder of wheels (torch and every locked "
                   "dependency, from `pip download`) to bundle: setup.sh then installs with no network")
    p.add_argument("--cell-timeout", type=float, default=60.0)
    p.add_argument("--item-timeout", type=float, default=None)
    p.set_defaults(func=cmd_gradescope)
    p = sub.add_parser("exercises", description="generate exercises/ from solutions/ (never overwrites your edits)")
    p.add_argument("--check", action="store_true", help="only report out-of-date exercises")
    p.add_argument("--force", action="store_true",
                   help="also replace exercises that hold edits, after backing each up to work/backups/")
    p.set_defaults(func=cmd_exercises)
    p = sub.add_parser("start", description="copy lesson NN's exercise into work/ (yours: never overwritten) and "
                       "say how to open it")
    p.add_argument("lesson", help="a lesson number (01) or id")
    p.add_argument("--open", action="store_true", help="then open it in JupyterLab")
    p.set_defaults(func=cmd_start)
    p = sub.add_parser("lab", allow_abbrev=False,
                       usage="course lab [--configure-only] [NOTEBOOK] [JupyterLab options, e.g. --port 8899]",
                       description="JupyterLab on the course. A notebook path opens JupyterLab at it; every "
                       "other argument goes on to jupyter lab (course lab --port 8899 --no-browser).")
    p.add_argument("--configure-only", action="store_true",
                   help="only write the course's JupyterLab settings into this environment")
    p.set_defaults(func=cmd_lab, lab_args=[])
    p = sub.add_parser("check", description="self-check exercises: pytest --nbval-lax, one pass/fail per check")
    p.add_argument("lessons", nargs="*", help="lesson numbers (your copy in work/, else exercises/), ids or "
                   "notebook paths (default: the exercises you started, else all)")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("progress", description="your last score per exercise and the lessons run so far")
    p.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    p.set_defaults(func=cmd_progress)
    p = sub.add_parser("site", description="build the course website into build/site (needs the site extra)")
    p.set_defaults(func=cmd_site)
    p = sub.add_parser("cheatsheet", description="write the interview cheat sheet to build/cheatsheet.md")
    p.set_defaults(func=cmd_cheatsheet)
    p = sub.add_parser("list", description="the lessons and their interview questions")
    p.set_defaults(func=cmd_list)
    parser.description = f"{__doc__}\n\n{_grouped_help(sub)}"
    args, unknown = parser.parse_known_args(argv)
    if args.func is cmd_lab:
        args.lab_args = unknown            # JupyterLab's own options pass through
    elif unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
