"""The `course` command's commands: what each one does, given its parsed arguments (`cmd_NAME(args)`, the
exit status). The parser that reads the command line and dispatches here is course_tools/cli.py."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
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
    from .threads import jobs_for
    # the timing table holds each lesson's time alone: one at a time; else two (never more than cores)
    jobs = jobs_for(args.jobs or (1 if args.update_readme else 2))
    if args.update_readme and jobs > 1:
        raise SystemExit("course run --update-readme: the timing table holds one lesson's time alone; "
                         f"add --jobs 1 (got --jobs {jobs})")
    started = time.perf_counter()
    table = run_lessons(_select(args.only), seed=args.seed, timeout=args.timeout, jobs=jobs)
    path = write_summary(table, args.seed, wall_seconds=time.perf_counter() - started)
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
        busy = run_busy_bench(args.busy, quick=args.quick, out=args.out)
        print(busy_markdown(busy))
        print(f"seconds and ratios: {args.out or 'build/bench-busy.csv'}")
        if args.update_readme:
            update_readme(busy, busy=True)
            print("docs/results.md busy-machine table updated")
        return 0
    table = run_bench(quick=args.quick, out=args.out, runs=args.runs)
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
        from .rapid_fire import rapid_main
        return rapid_main(args.lang, args.n, lesson=number)
    if args.whiteboard is not None or args.grade:
        from .whiteboard import main as whiteboard
        return whiteboard(args.whiteboard, args.lang, grade_only=args.grade)
    return interview(number, args.all, args.lang, args.n, in_order=args.in_order)


def cmd_list(args) -> int:
    for lesson in LESSONS:
        print(f"{lesson.number:02d}  {lesson.id:24s} {lesson.question}  ({lesson.question_zh})")
    return 0
