"""The `course` command: run lessons, grade exercises, open the lab."""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from . import ROOT
from .manifest import LESSONS, available


def _select(only: list[str] | None):
    lessons = available()
    if only:
        def key(x):
            return f"{int(x):02d}" if x.isdigit() else x    # "1" and "01" both mean lesson 01
        known = {f"{l.number:02d}" for l in lessons} | {l.id for l in lessons}
        unknown = [x for x in only if key(x) not in known]
        if unknown:
            numbers = sorted(l.number for l in lessons)
            span = f"{numbers[0]:02d}-{numbers[-1]:02d}" if numbers else "none"
            raise SystemExit(f"--only: no lesson {', '.join(map(repr, unknown))}; the lessons are {span} "
                             "(numbers or ids: `course list` shows them)")
        wanted = {key(x) for x in only}
        lessons = [l for l in lessons if f"{l.number:02d}" in wanted or l.id in wanted]
    return lessons


# the last line of `course run` (and so of `make course`): where a learner goes from here
NEXT_STEP = "Next: `make lab` to open the lessons in JupyterLab, or `course start 00` for the warm-up exercise"


def cmd_run(args) -> int:
    from .runner import run_lessons, update_readme, write_summary
    table = run_lessons(_select(args.only), seed=args.seed, timeout=args.timeout)
    path = write_summary(table, args.seed)
    print(path.read_text(encoding="utf-8"))
    print(f"summary: {path.relative_to(ROOT)} (and summary.csv); executed notebooks: build/notebooks/")
    if args.update_readme:
        update_readme(table)
        print("docs/results.md timing table updated")
    print(NEXT_STEP)
    return 0 if (table["claims held"] == "yes").all() else 1


def cmd_sweep(args) -> int:
    from .sweep.ledger import DEFAULT_RUNS, Run
    from .sweep.results import update_readme
    from .sweep.running import sweep
    from .sweep.statistics import robustness_table
    runs = DEFAULT_RUNS if args.seeds is None else [Run(f"seed {s}", s) for s in args.seeds]
    if args.seeds is not None and args.threads_run:
        runs = runs + [Run(f"seed {args.seeds[0]}, 2 threads", args.seeds[0], threads=2)]
    if args.collect:
        from .sweep.results import collect
        runs_table, claims_table = collect(_select(args.only), runs)
    else:
        runs_table, claims_table = sweep(_select(args.only), runs, jobs=args.jobs, timeout=args.timeout,
                                         resume=args.resume)
    table = robustness_table(runs_table, claims_table)
    print(table.to_markdown(index=False))
    if len(claims_table):
        from .sweep.statistics import MIN_SEED_RANGES, claim_spread, thin_claims, undeclared_constants
        spread = claim_spread(claims_table)
        columns = ["lesson", "statement", "min", "max", "op", "threshold", "seed ranges"]
        for title, found in [(f"evidence claims fewer than {MIN_SEED_RANGES:g} seed ranges from "
                              f"their threshold", thin_claims(spread)),
                             ("evidence claims that never moved (declare them identity or "
                              "deterministic, with why=...)", undeclared_constants(spread))]:
            if len(found):
                print(f"\n{title}:")
                print(found[columns].to_markdown(index=False))
    failed = runs_table[runs_table["claims held"] != "yes"]
    if len(failed):
        print("\nruns whose claims did not hold:")
        print(failed[["lesson", "id", "run", "claims held", "error"]].to_markdown(index=False))
    if args.update_readme:
        update_readme(table, runs)
        print("docs/results.md robustness table updated")
    print("per-claim values: build/sweep.csv, summary docs/sweep/claims.csv; per run: build/sweep_runs.csv")
    return 0 if failed.empty else 1


def cmd_bench(args) -> int:
    from .bench import markdown, run_bench, update_readme
    if args.busy:                                       # the same table, quiet and under load
        from .bench import busy_markdown, run_busy_bench
        print(busy_markdown(run_busy_bench(args.busy, quick=args.quick, out=args.out)))
        print(f"seconds and ratios: {args.out or 'build/bench-busy.csv'}")
        return 0
    table = run_bench(quick=args.quick, out=args.out)
    print(markdown(table))
    print(f"seconds and ratios: {args.out or 'build/bench.csv'}")
    if args.update_readme:
        update_readme(table)
        print("docs/results.md bench table updated")
    return 0


def cmd_store(args) -> int:
    from .runner import store
    store(_select(args.only), timeout=args.timeout)
    return 0


def _notebook_arg(item: str, command: str, purpose: str):
    """The notebook a learner means (a lesson number, an id, a path anywhere), or None after
    saying why not (naming the nearest notebook of the course)."""
    from .workspace import NotebookNotFound, resolve
    try:
        return resolve(item, purpose)
    except NotebookNotFound as error:
        print(f"course {command}: {error}", file=sys.stderr)
        return None


def cmd_grade(args) -> int:
    from .grader import GradeError, format_report, grade, lesson_of, read_notebook
    from .workspace import display
    path = _notebook_arg(args.path, "grade", "grade")
    if path is None:
        if args.json:
            print(json.dumps({"error": {"code": "not-found", "message": f"no such file {args.path!r}"}}))
        return 2
    if not args.json and str(path) != args.path:
        print(f"grading {display(path)}")
    try:
        lesson = lesson_of(read_notebook(path), path)   # an exercise? (else refused: nothing recorded)
        report = grade(path, cell_timeout=args.cell_timeout, item_timeout=args.item_timeout)
    except GradeError as error:  # one uniform error: JSON on stdout with --json, a line on stderr
        if args.json:
            print(json.dumps(error.as_json()))
        print(f"course grade: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # noqa: BLE001 - never a traceback for a submission
        if args.json:
            print(json.dumps({"error": {"code": "internal", "message": type(error).__name__}}))
        print(f"course grade: internal error ({type(error).__name__})", file=sys.stderr)
        return 2
    print(json.dumps(report) if args.json else format_report(report, os.path.basename(str(path))))
    from . import progress
    from .workspace import started_copy, untouched_exercise
    copy = started_copy(lesson)
    if copy is not None and untouched_exercise(path, lesson):
        # the blank exercise while the learner works in a copy: their last score stays
        print(f"note: {display(path)} is the untouched exercise; your copy is {display(copy)} "
              f"(course grade {lesson.number:02d} grades it). Not recorded in course progress.",
              file=sys.stderr)
        return 0
    progress.record(report, path, lesson.number)  # `course progress`: the last score per lesson
    return 0


def cmd_grade_class(args) -> int:
    from .lms.gradebook import cli
    return cli(args)        # prints the summary; exit status 2 only for a bad folder or roster


def cmd_gradescope(args) -> int:
    from .lms.gradescope_bundle import cli_build
    return cli_build(args)


def cmd_exercises(args) -> int:
    from .exercises import sync
    from .workspace import WORK_SUFFIX, display
    report = sync(check_only=args.check, force=args.force)
    kept = set(report.kept)
    for name in report.extra:
        print(f"left alone: exercises/{name} (not a generated exercise; course exercises never deletes it)")
    if args.check:
        stale = [n for n in report.stale if n not in kept]
        if stale:
            print("out of date:", ", ".join(stale), "(run `course exercises`)")
        if kept:
            print("edited (course exercises will not overwrite them):", ", ".join(sorted(kept)))
        if not report.stale:
            print("checked exercises (0 changed)")
        return 1 if report.stale else 0
    for backup in report.backups:
        print(f"backed up your edited exercise to {display(backup)}")
    print(f"wrote exercises ({len(report.written)} changed)")
    if kept and not args.force:
        for name in sorted(kept):
            print(f"kept exercises/{name}: it holds edits (it differs from the exercise as generated), "
                  "so it was not replaced", file=sys.stderr)
            copy = f"work/{Path(name).stem}{WORK_SUFFIX}.ipynb"
            print(f"  to keep working on it: `course start {name[:2]}` copies it, edits included, to "
                  f"{copy} (course exercises never touches work/)", file=sys.stderr)
        print("  to replace edited exercises with the generated ones anyway: `course exercises --force` "
              "(it first backs each one up to work/backups/)", file=sys.stderr)
        return 1
    return 0


def cmd_start(args) -> int:
    from .workspace import NotebookNotFound, display, lesson_for, start
    try:
        path, created = start(args.lesson)
    except NotebookNotFound as error:
        print(f"course start: {error}", file=sys.stderr)
        return 2
    lesson = lesson_for(args.lesson)
    number = f"{lesson.number:02d}"
    shown = display(path)
    if created:
        print(f"copied exercises/{lesson.exercise.name} to {shown}: answer there")
    else:
        print(f"already started: {shown} (your answers in it are kept)")
    print(f"  open it:     course lab {shlex.quote(shown)}   (or, in a running JupyterLab, from the file browser)")
    print(f"  self-check:  course check {number}")
    print(f"  grade:       course grade {number}   (then: course progress)")
    print("  work/ is yours: git ignores it and `course exercises` never writes there")
    if args.open:
        if os.environ.get("JUPYTER_SERVER_ROOT"):   # typed in JupyterLab's own terminal
            print(f"JupyterLab is running already: open {shown} from its file browser")
            return 0
        from . import lab
        try:
            extra = lab.arguments([str(path)])
        except ValueError as error:
            print(f"course start: {error}", file=sys.stderr)
            return 2
        lab.configure()
        return subprocess.call(lab.command(extra), cwd=ROOT, env=lab.environment())
    return 0


def cmd_lab(args) -> int:
    from . import lab
    changed = lab.configure()  # idempotent; `make install` has normally done it already
    if args.configure_only:
        for path in changed:
            print(f"wrote {path}")
        print("JupyterLab settings of the course are in place (news and update checks off, course kernel)")
        return 0
    try:
        extra = lab.arguments(args.lab_args)
    except ValueError as error:
        print(f"course lab: {error}", file=sys.stderr)
        return 2
    return subprocess.call(lab.command(extra), cwd=ROOT, env=lab.environment())


def cmd_check(args) -> int:
    from .selfcheck import format_result, run
    from .workspace import display, started_copy
    paths = []
    if not args.lessons:   # every exercise you started; with none started, every exercise
        started = [started_copy(l) for l in LESSONS if l.has_exercise]
        paths = [p for p in started if p is not None] or [l.exercise for l in LESSONS if l.has_exercise]
    for item in args.lessons:
        path = _notebook_arg(item, "check", "check")
        if path is None:
            return 2
        paths.append(Path(path).resolve())
    print("running: pytest --nbval-lax " + " ".join(shlex.quote(display(p)) for p in paths))
    results = run(paths)
    for result in results.values():
        print(format_result(result))
    return 0 if all(r.passed for r in results.values()) else 1


def cmd_progress(args) -> int:
    from . import progress
    table = progress.table()
    if args.csv:
        print(table.to_csv(index=False))
        print(progress.footer(table))
    else:
        print(progress.render(table))   # at most progress.WIDTH (100) characters a line
    return 0


def cmd_site(args) -> int:
    from .site import main as build_site
    return build_site()


def cmd_cheatsheet(args) -> int:
    from .cheatsheet import write
    print(f"cheat sheet: {write()}")
    return 0


def cmd_interview(args) -> int:
    from .interview import main as interview
    if args.store_cells:
        from .interview import store_quiz_cells
        for lesson in _select([args.lesson] if args.lesson else None):
            if lesson.number:
                changed = store_quiz_cells(lesson)
                print(f"{lesson.notebook.name}: {'Check yourself cells written' if changed else 'up to date'}")
        return 0
    if args.lesson is not None:
        number = _select([args.lesson])[0].number
    else:
        number = None
    if args.rapid:
        from .interview import rapid_main
        return rapid_main(args.lang, args.n, lesson=number)
    if args.whiteboard is not None or args.grade:
        from .whiteboard import main as whiteboard
        return whiteboard(args.whiteboard, args.lang, grade_only=args.grade)
    return interview(number, args.all, args.lang, args.n, in_order=args.in_order)


def cmd_list(args) -> int:
    for lesson in LESSONS:
        print(f"{lesson.number:02d}  {lesson.id:24s} {lesson.question}  ({lesson.question_zh})")
    return 0


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
    p.add_argument("--update-readme", action="store_true", help="write the timing table of docs/results.md")
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
    p.add_argument("--update-readme", action="store_true", help="write the speed table of docs/results.md")
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
    p.add_argument("--cell-timeout", type=float, default=60.0, help="seconds per cell")
    p.add_argument("--item-timeout", type=float, default=None, help="seconds per graded item "
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
