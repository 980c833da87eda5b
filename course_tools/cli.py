"""The `course` command: run lessons, grade exercises, open the lab."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from . import ROOT
from .manifest import LESSONS, available


def _select(only: list[str] | None):
    lessons = available()
    if only:
        wanted = {f"{int(x):02d}" if x.isdigit() else x for x in only}   # "1" and "01" both mean lesson 01
        lessons = [l for l in lessons if f"{l.number:02d}" in wanted or l.id in wanted]
        if not lessons:
            raise SystemExit(f"--only: no lesson matches {only}")
    return lessons


def cmd_run(args) -> int:
    from .runner import run_lessons, update_readme, write_summary
    table = run_lessons(_select(args.only), seed=args.seed, timeout=args.timeout)
    path = write_summary(table, args.seed)
    print(path.read_text(encoding="utf-8"))
    print(f"summary: {path.relative_to(ROOT)} (and summary.csv); executed notebooks: build/notebooks/")
    if args.update_readme:
        update_readme(table)
        print("README.md timing table updated")
    return 0 if (table["claims held"] == "yes").all() else 1


def cmd_sweep(args) -> int:
    from .sweep import DEFAULT_RUNS, Run, robustness_table, sweep, update_readme
    runs = DEFAULT_RUNS if args.seeds is None else [Run(f"seed {s}", s) for s in args.seeds]
    if args.seeds is not None and args.threads_run:
        runs = runs + [Run(f"seed {args.seeds[0]}, 2 threads", args.seeds[0], threads=2)]
    if args.collect:
        from .sweep import collect
        runs_table, claims_table = collect(_select(args.only), runs)
    else:
        runs_table, claims_table = sweep(_select(args.only), runs, jobs=args.jobs, timeout=args.timeout)
    table = robustness_table(runs_table, claims_table)
    print(table.to_markdown(index=False))
    failed = runs_table[runs_table["claims held"] != "yes"]
    if len(failed):
        print("\nruns whose claims did not hold:")
        print(failed[["lesson", "id", "run", "claims held", "error"]].to_markdown(index=False))
    if args.update_readme:
        update_readme(table, runs)
        print("README.md robustness table updated")
    print("per-claim values: build/sweep.csv; per run: build/sweep_runs.csv")
    return 0 if failed.empty else 1


def cmd_bench(args) -> int:
    from .bench import markdown, run_bench, update_readme
    table = run_bench(quick=args.quick, out=args.out)
    print(markdown(table))
    print(f"seconds and ratios: {args.out or 'build/bench.csv'}")
    if args.update_readme:
        update_readme(table)
        print("README.md bench table updated")
    return 0


def cmd_store(args) -> int:
    from .runner import store
    store(_select(args.only), timeout=args.timeout)
    return 0


def cmd_grade(args) -> int:
    from .grader import GradeError, format_report, grade
    try:
        report = grade(args.path, cell_timeout=args.cell_timeout, item_timeout=args.item_timeout)
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
    print(json.dumps(report) if args.json else format_report(report, os.path.basename(args.path)))
    from . import progress
    progress.record(report, args.path)  # `course progress` shows the last score per exercise
    return 0


def cmd_grade_class(args) -> int:
    from .gradebook import grade_class
    folder = args.submissions
    if not os.path.isdir(folder):
        print(f"course grade-class: {folder!r} is not a folder", file=sys.stderr)
        return 2
    result = grade_class(folder, args.out, jobs=args.jobs, cell_timeout=args.cell_timeout,
                         item_timeout=args.item_timeout)
    print(f"{len(result['rows'])} notebooks: {result['graded']} graded, {result['errors']} errors; "
          f"mean score fraction {result['mean_fraction']:.3f}")
    print(f"grades: {result['csv']}; histogram: {result['histogram']}")
    return 0


def cmd_exercises(args) -> int:
    from .exercises import generate
    stale = generate(check_only=args.check)
    if args.check and stale:
        print("out of date:", ", ".join(stale))
        return 1
    print(f"{'checked' if args.check else 'wrote'} exercises ({len(stale)} changed)")
    return 0


def cmd_lab(args) -> int:
    from . import lab
    changed = lab.configure()  # idempotent; `make install` has normally done it already
    if args.configure_only:
        for path in changed:
            print(f"wrote {path}")
        print("JupyterLab settings of the course are in place (news and update checks off, course kernel)")
        return 0
    return subprocess.call(lab.command(args.lab_args), cwd=ROOT, env=lab.environment())


def cmd_check(args) -> int:
    from .manifest import LESSONS
    from .selfcheck import format_result, run
    paths = []
    for item in args.lessons or [f"{l.number:02d}" for l in LESSONS if l.has_exercise]:
        if item.endswith(".ipynb"):
            paths.append(os.path.abspath(item))
            continue
        match = [l for l in LESSONS if f"{l.number:02d}" == item.zfill(2) or l.id == item]
        if not match or not match[0].has_exercise:
            print(f"course check: no exercise for {item!r} (give a lesson number, an id or a notebook path)",
                  file=sys.stderr)
            return 2
        paths.append(match[0].exercise)
    print("running: pytest --nbval-lax " + " ".join(os.path.relpath(p, ROOT) for p in paths))
    results = run(paths)
    for result in results.values():
        print(format_result(result))
    return 0 if all(r.passed for r in results.values()) else 1


def cmd_progress(args) -> int:
    from . import progress
    table = progress.table()
    print(table.to_markdown(index=False) if not args.csv else table.to_csv(index=False))
    print(progress.footer(table))
    return 0


def cmd_site(args) -> int:
    from .site import main as build_site
    return build_site()


def cmd_cheatsheet(args) -> int:
    from .cheatsheet import write
    print(f"cheat sheet: {write()}")
    return 0


def cmd_list(args) -> int:
    for lesson in LESSONS:
        print(f"{lesson.number:02d}  {lesson.id:24s} {lesson.question}  ({lesson.question_zh})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="course", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="execute lessons with papermill; write build/summary.md")
    p.add_argument("--only", nargs="*", help="lesson numbers or ids")
    p.add_argument("--seed", type=int, default=None, help="override every lesson's SEED")
    p.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    p.add_argument("--update-readme", action="store_true", help="write the README timing table")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("sweep", help="run lessons at seeds 0-4 and with 2 threads; write build/sweep.csv")
    p.add_argument("--only", nargs="*", help="lesson numbers or ids")
    p.add_argument("--seeds", nargs="*", type=int, default=None, help="instead of 0-4 (+ 1 with 2 threads)")
    p.add_argument("--threads-run", action="store_true", help="with --seeds: add a 2-thread run")
    p.add_argument("--jobs", type=int, default=1, help="lessons run in parallel (worker processes)")
    p.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    p.add_argument("--update-readme", action="store_true", help="write the README robustness table")
    p.add_argument("--collect", action="store_true",
                   help="run nothing: rebuild the tables from the runs left in build/sweep/")
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser("bench", help="course BERT vs Hugging Face speed ratios; write build/bench.csv")
    p.add_argument("--quick", action="store_true", help="a tiny random BERT and small shapes (seconds)")
    p.add_argument("--out", default=None, help="the CSV (default build/bench.csv)")
    p.add_argument("--update-readme", action="store_true", help="write the README bench table")
    p.set_defaults(func=cmd_bench)
    p = sub.add_parser("store", help="execute lessons in place, storing their outputs")
    p.add_argument("--only", nargs="*")
    p.add_argument("--timeout", type=int, default=600)
    p.set_defaults(func=cmd_store)
    p = sub.add_parser("grade", help="grade an exercise notebook")
    p.add_argument("path")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--cell-timeout", type=float, default=60.0, help="seconds per cell")
    p.add_argument("--item-timeout", type=float, default=None, help="seconds per graded item "
                   "(default: the cell timeout)")
    p.set_defaults(func=cmd_grade)
    p = sub.add_parser("grade-class", help="grade a folder of submissions into a CSV gradebook")
    p.add_argument("submissions", help="one sub-folder or one notebook per student")
    p.add_argument("--out", default="grades.csv", help="the CSV; the histogram goes next to it (.png)")
    p.add_argument("--jobs", type=int, default=None, help="parallel graders (default: the core count)")
    p.add_argument("--cell-timeout", type=float, default=60.0)
    p.add_argument("--item-timeout", type=float, default=None)
    p.set_defaults(func=cmd_grade_class)
    p = sub.add_parser("exercises", help="generate exercises/ from solutions/")
    p.add_argument("--check", action="store_true", help="only report out-of-date exercises")
    p.set_defaults(func=cmd_exercises)
    p = sub.add_parser("lab", help="open JupyterLab at the lesson map (notebooks/00_welcome.ipynb)")
    p.add_argument("--configure-only", action="store_true",
                   help="only write the course's JupyterLab settings into this environment")
    p.add_argument("lab_args", nargs=argparse.REMAINDER, help="passed on to jupyter lab (e.g. --port 8899)")
    p.set_defaults(func=cmd_lab)
    p = sub.add_parser("check", help="self-check exercises: pytest --nbval-lax, one pass/fail per check")
    p.add_argument("lessons", nargs="*", help="lesson numbers, ids or notebook paths (default: all)")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("progress", help="your last score per exercise and the lessons run so far")
    p.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    p.set_defaults(func=cmd_progress)
    p = sub.add_parser("site", help="build the course website into build/site (needs the site extra)")
    p.set_defaults(func=cmd_site)
    p = sub.add_parser("cheatsheet", help="write the interview cheat sheet to build/cheatsheet.md")
    p.set_defaults(func=cmd_cheatsheet)
    p = sub.add_parser("list", help="the lessons and their interview questions")
    p.set_defaults(func=cmd_list)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
