"""`course grade-class SUBMISSIONS --out grades.csv`: grade a class into a gradebook.

The submissions folder holds one sub-folder per student (every file in it, at any depth, gets a
row) or one file per student. Downloads from an LMS are recognised by their names (`lms_name`):
Canvas (`lastfirst_12345_67890_original.ipynb`, `_late_` too) and Moodle (`Full Name_12345_
assignsubmission_file_original.ipynb`, flat or in per-student folders) map to the LMS's student
ID. Names are read as UTF-8, else as cp1252 (a zip made on Windows), never crashing on bytes.

Every file gets one row: a notebook its score, per-item points and a short feedback; anything
else (a .zip, a .py, an empty file, a symbolic link) an error saying why it was not graded.
With `--roster`, rows carry the roster's student ID and name, and every roster student without a
submission gets a `missing` row. The hidden cases' seed is chosen once per run and recorded per
row: `--seed S` regrades to the same points. Written next to the long CSV (`grades.csv`): the
wide CSV (`grades_wide.csv`: one column per lesson and a total), optional LMS imports
(`--format canvas|moodle`), and `grades.png` with one histogram per lesson. Every CSV cell that
a spreadsheet would run as a formula is prefixed with a single quote.

Submissions are graded in parallel, each in its own worker process and its own sandbox, so a
hostile submission changes nobody else's grade.
"""
from __future__ import annotations

import csv
import datetime as dt
import json
import os
import re
import secrets
import stat
import unicodedata
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from .grader import GradeError, grade, lesson_of, official_items, read_notebook

COLUMNS = ["student", "name", "lesson", "file", "score", "max", "points", "feedback", "error", "seed",
           "in_roster", "written"]
# The written answers, one row each, for the person who grades them (`<out>_written.csv`): the
# "points" column is theirs to fill.
WRITTEN_COLUMNS = ["student", "name", "lesson", "file", "item", "points", "max", "answer", "rubric"]
FORMATS = ("canvas", "moodle")
# Files an archive or an OS adds on its own: not a student's submission, no row.
NOISE = {".DS_Store", "Thumbs.db", "desktop.ini", "__MACOSX", ".ipynb_checkpoints"}
MAX_FILES = 100_000            # a runaway folder tree stops here (and says so)
FEEDBACK_CHARS = 300


# ------------------------------------------------------------------ names

def readable(name: str) -> str:
    """A file name as text: UTF-8, else cp1252 (zips made on Windows), else with U+FFFD;
    control characters become '?'. Never raises, whatever bytes the name holds."""
    raw = os.fsencode(name)
    for encoding in ("utf-8", "cp1252"):
        try:
            text = raw.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    else:
        text = raw.decode("utf-8", "replace")
    text = unicodedata.normalize("NFC", text)
    return "".join(ch if ch.isprintable() else "?" for ch in text)


# Canvas: "<sortable name, letters only>_[late_]<user id>_<submission id>_<original name>"
# (resubmissions add "-1", "-2" to the original name).
CANVAS = re.compile(r"^(?P<name>[^_\s]+?)_(?:late_|LATE_)?(?P<id>\d+)_(?P<sub>\d+)_(?P<original>.+)$")
# Moodle: "<Full Name>_<participant id>_assignsubmission_<plugin>_<original name>" (a file), or the
# folder "<Full Name>_<participant id>_assignsubmission_<plugin>_" holding the original files.
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<original>.*)$")


@dataclass(frozen=True)
class LmsName:
    student: str      # the LMS's student ID (Canvas user ID, Moodle participant ID), else the name
    name: str         # the name the download carries ("" when none)
    lms: str          # "canvas", "moodle" or ""
    original: str     # the file name the student uploaded


def lms_name(name: str, is_dir: bool = False) -> LmsName:
    """Who a top-level file or folder of a download belongs to, from its name."""
    text = readable(name)
    match = MOODLE.match(text)
    if match:
        return LmsName(match["id"], match["name"].strip(), "moodle", match["original"])
    match = CANVAS.match(text) if not is_dir else None
    if match:
        return LmsName(match["id"], match["name"], "canvas", match["original"])
    stem = text if is_dir else (text[:-len(".ipynb")] if text.lower().endswith(".ipynb") else text)
    return LmsName(stem, "", "", text)


# ------------------------------------------------------------------ finding the files

@dataclass
class Entry:
    student: str                 # the student's key (LMS ID, folder or file name)
    name: str                    # a name from the download, if any
    lms: str
    path: str                    # the real path (may hold undecodable bytes: never printed)
    file: str                    # readable, relative to the class folder
    problem: str = ""            # "code: why" when the file is not graded


def _kind(path: str, st) -> str:
    """'' for a file to grade, else the reason it is not graded."""
    if stat.S_ISLNK(st.st_mode):
        return "not-a-file: a symbolic link (not followed); submit the file itself"
    if not stat.S_ISREG(st.st_mode):
        return "not-a-file: not a regular file"
    if not path.lower().endswith(".ipynb"):
        suffix = os.path.splitext(readable(os.path.basename(path)))[1] or "no extension"
        return f"not-a-notebook: a {suffix} file, not a notebook; submit the .ipynb"
    return ""


def submissions(folder) -> list[Entry]:
    """Every file of the class folder, as an Entry; symbolic links are listed, never followed."""
    folder = os.fspath(folder)
    entries: list[Entry] = []

    def add(owner: LmsName, path: str, problem: str = ""):
        rel = readable(os.path.relpath(path, folder))
        entries.append(Entry(owner.student, owner.name, owner.lms, path, rel, problem))

    def walk(owner: LmsName, top: str):
        stack = [top]
        while stack and len(entries) < MAX_FILES:
            current = stack.pop()
            try:
                with os.scandir(current) as it:
                    children = sorted(it, key=lambda e: e.name)
            except OSError as error:
                add(owner, current, f"unreadable: the folder could not be listed ({error.strerror})")
                continue
            subdirs = []
            for child in children:
                if child.name in NOISE or child.name.startswith("._"):
                    continue
                try:
                    st = child.stat(follow_symlinks=False)
                except OSError:
                    add(owner, child.path, "unreadable: could not be read")
                    continue
                if stat.S_ISDIR(st.st_mode):
                    subdirs.append(child.path)
                else:
                    add(owner, child.path, _kind(child.path, st))
            stack.extend(reversed(subdirs))

    with os.scandir(folder) as it:
        top = sorted(it, key=lambda e: e.name)
    for entry in top:
        if entry.name in NOISE or entry.name.startswith("._") or len(entries) >= MAX_FILES:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            add(lms_name(entry.name), entry.path, "unreadable: could not be read")
            continue
        if stat.S_ISDIR(st.st_mode):
            owner = lms_name(entry.name, is_dir=True)
            before = len(entries)
            walk(owner, entry.path)
            if len(entries) == before:
                add(owner, entry.path, "empty: the folder holds no file")
        else:
            owner = lms_name(entry.name)
            add(owner, entry.path, _kind(entry.path, st))
    if len(entries) >= MAX_FILES:
        entries.append(Entry("", "", "", folder, ".", f"too-many-files: stopped after {MAX_FILES} files"))
    return entries


# ------------------------------------------------------------------ the roster

ID_COLUMNS = ("ID", "Identifier", "SIS User ID", "Student ID", "student_id", "student id", "id",
              "ID number", "Username", "username", "SIS Login ID", "Email address", "email", "Email")
NAME_COLUMNS = ("Student", "Full name", "Name", "name", "student", "Student name")


def _norm(text: str) -> str:
    """Lower-case letters and digits only, accents dropped: "Müller, Erin" -> "mullererin"."""
    text = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in text.lower() if ch.isalnum() and not unicodedata.combining(ch))


def _digits(text: str) -> str:
    """"Participant 12345" (Moodle's identifier) -> "12345"; "" when it holds no number."""
    match = re.search(r"(\d+)\s*$", text)
    return match.group(1) if match else ""


class RosterError(ValueError):
    pass


@dataclass
class Roster:
    columns: list[str]
    rows: list[dict]
    id_column: str
    name_column: str | None

    def name_of(self, row: dict) -> str:
        if self.name_column:
            return row.get(self.name_column, "")
        first = next((c for c in self.columns if c.lower() in ("first name", "firstname", "first")), None)
        last = next((c for c in self.columns if c.lower() in ("last name", "lastname", "surname", "last")), None)
        return " ".join(row.get(c, "") for c in (first, last) if c).strip()

    def index(self) -> tuple[dict, dict]:
        """(by ID-like value, by normalised name) -> roster row."""
        by_id, by_name = {}, {}
        id_like = [c for c in self.columns if c in ID_COLUMNS or c == self.id_column]
        for row in self.rows:
            for column in id_like:
                value = row.get(column, "").strip()
                if value:
                    by_id.setdefault(value.lower(), row)
                    if _digits(value) and column in ("Identifier", self.id_column):
                        by_id.setdefault(_digits(value), row)
                    if "@" in value:
                        by_id.setdefault(value.split("@")[0].lower(), row)
            name = self.name_of(row)
            if name:
                by_name.setdefault(_norm(name), row)
                if "," in name:     # "Last, First": Canvas's sortable name
                    last, first = name.split(",", 1)
                    by_name.setdefault(_norm(first + last), row)
                    by_name.setdefault(_norm(last + first), row)
                else:
                    parts = name.split()
                    if len(parts) > 1:
                        by_name.setdefault(_norm(parts[-1] + "".join(parts[:-1])), row)
        return by_id, by_name


def read_roster(path, id_column: str | None = None) -> Roster:
    """A roster CSV: any export with a student ID column (Canvas gradebook: ID; Moodle grading
    worksheet: Identifier; or student_id, SIS User ID, Username, Email address, ...) and,
    optionally, a name column. UTF-8 (with or without BOM), else cp1252."""
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", "replace")
    reader = csv.DictReader(text.splitlines())
    columns = [c.strip() for c in (reader.fieldnames or [])]
    if not columns:
        raise RosterError(f"{path}: the roster is empty (a CSV with a header row is expected)")
    reader.fieldnames = columns
    if id_column is None:
        id_column = next((c for c in ID_COLUMNS if c in columns), None)
        if id_column is None:
            raise RosterError(f"{path}: no student ID column (one of {', '.join(ID_COLUMNS)}); "
                              f"its columns are {', '.join(columns)} - name one with --id-column")
    elif id_column not in columns:
        raise RosterError(f"{path}: no column {id_column!r}; its columns are {', '.join(columns)}")
    name_column = next((c for c in NAME_COLUMNS if c in columns and c != id_column), None)
    rows = []
    for row in reader:
        row = {k: (v or "").strip() for k, v in row.items() if k is not None}
        value = row.get(id_column, "")
        # Canvas exports carry a "Points Possible" row (and sometimes a muted-assignment row)
        if not value or "points possible" in " ".join(row.values()).lower():
            continue
        rows.append(row)
    return Roster(columns, rows, id_column, name_column)


def match(roster: Roster, entries: list[Entry]) -> dict[str, dict]:
    """Student key -> roster row, by ID first (LMS IDs, logins, e-mail), then by name."""
    by_id, by_name = roster.index()
    found = {}
    for entry in entries:
        if entry.student in found:
            continue
        row = by_id.get(entry.student.lower()) or by_id.get(_digits(entry.student) if entry.lms else "")
        if row is None:
            for candidate in (entry.name, entry.student):
                if candidate and _norm(candidate) in by_name:
                    row = by_name[_norm(candidate)]
                    break
        if row is not None:
            found[entry.student] = row
    return found


# ------------------------------------------------------------------ grading

def summarize(report: dict) -> str:
    """One short line for the feedback column."""
    items = [i for i in report["items"] if not i.get("manual")]
    written = [i for i in report["items"] if i.get("manual")]
    failed = [i for i in items if not i["passed"]]
    by_hand = "".join(f"; {i['id']}: {'written, ' if i.get('answer') else 'not written, '}graded by hand"
                      for i in written)
    if not items:
        return "no graded items" + by_hand
    if not failed:
        return (f"all {len(items)} items passed" if len(items) > 1 else "the item passed") + by_hand
    if all("NotImplementedError" in i["feedback"] for i in failed) and len(failed) == len(items):
        return "not started: every answer still raises NotImplementedError" + by_hand
    text = f"{len(items) - len(failed)}/{len(items)} items passed; " + "; ".join(
        f"{i['id']}: {i['feedback']}" for i in failed) + by_hand
    return text if len(text) <= FEEDBACK_CHARS else text[:FEEDBACK_CHARS - 1] + "…"


def _error_feedback(code: str) -> str:
    return {"not-a-notebook": "not a notebook the grader can read: submit the exercise's .ipynb",
            "not-a-file": "not a regular file: submit the notebook itself",
            "too-large": "the notebook is too large: clear its outputs",
            "unknown-lesson": "not a course exercise (no lesson in its metadata): submit your copy of "
                              "the exercise notebook",
            "not-an-exercise": "a lesson notebook, not its exercise",
            "empty": "an empty folder", "unreadable": "could not be read",
            "missing": "no submission", "sandbox": "the grader could not run (the machine, not you)",
            "internal": "the grader failed on this file (the machine, not you)",
            }.get(code, "not graded")


def _grade_one(job) -> dict:
    path, options = job
    row = {"lesson": "", "score": 0, "max": "", "points": "{}", "feedback": "", "error": "", "seed": "",
           "written": "[]"}
    try:
        row["lesson"] = f"{lesson_of(read_notebook(path), path).number:02d}"
        report = grade(path, **options)
        row.update(score=report["score"], max=report["max_score"], seed=options.get("seed", ""),
                   points=json.dumps({i["id"]: i["points"] for i in report["items"] if not i.get("manual")}),
                   feedback=summarize(report),
                   written=json.dumps([{k: i.get(k) for k in ("id", "max_points", "answer", "rubric")}
                                       for i in report["items"] if i.get("manual")], ensure_ascii=False))
    except GradeError as error:
        row["error"] = f"{error.code}: {error}"
        row["feedback"] = _error_feedback(error.code)
    except Exception as error:  # noqa: BLE001 - one submission never stops the class
        row["error"] = f"internal: {type(error).__name__}"
        row["feedback"] = _error_feedback("internal")
    return row


def lesson_max(number: str) -> int | None:
    """The points an exercise is worth, from its official notebook and the checks' registry."""
    from .grader import rebuild, validate
    from .grader.authoring import load_all
    from .manifest import LESSONS
    lesson = next((l for l in LESSONS if f"{l.number:02d}" == number and l.has_exercise), None)
    if lesson is None or not lesson.exercise.exists():
        return None
    nb = validate(json.loads(lesson.exercise.read_text(encoding="utf-8")))
    registry = load_all()
    return sum(registry[s["id"]].points for s in rebuild(nb, nb)
               if s["kind"] == "grade" and s["id"] in registry and not registry[s["id"]].manual)


def lesson_written(number: str) -> list[tuple[str, int]]:
    """The lesson's manually graded items: (id, points)."""
    try:
        return [(i["id"], i["max_points"]) for i in official_items(int(number)) if i.get("manual")]
    except (StopIteration, OSError, ValueError):
        return []


def written_rows(rows: list[dict]) -> list[dict]:
    """One row per written answer of the best graded file per (student, lesson), for a person to
    grade; the points column stays empty."""
    out = []
    for (student, lesson), row in _best(rows).items():
        for item in json.loads(row.get("written") or "[]"):
            out.append({"student": student, "name": row["name"], "lesson": lesson, "file": row["file"],
                        "item": item["id"], "points": "", "max": item["max_points"],
                        "answer": item.get("answer") or "", "rubric": " | ".join(item.get("rubric") or [])})
    return out


def grade_entries(entries: list[Entry], jobs: int, options: dict) -> list[dict]:
    """One row per entry (same order); notebooks graded in parallel worker processes."""
    rows: list[dict | None] = [None] * len(entries)
    todo = []
    for index, entry in enumerate(entries):
        if entry.problem:
            code = entry.problem.split(":", 1)[0]
            rows[index] = {"lesson": "", "score": 0, "max": "", "points": "{}", "seed": "",
                           "feedback": _error_feedback(code), "error": entry.problem}
        else:
            todo.append(index)
    jobs = max(1, min(jobs, len(todo) or 1))
    if jobs == 1:
        for index in todo:
            rows[index] = _grade_one((entries[index].path, options))
    else:
        with ProcessPoolExecutor(jobs) as pool:
            futures = {pool.submit(_grade_one, (entries[i].path, options)): i for i in todo}
            for future in as_completed(futures):
                try:
                    rows[futures[future]] = future.result()
                except Exception as error:  # noqa: BLE001 - a worker that died (memory?)
                    rows[futures[future]] = {"lesson": "", "score": 0, "max": "", "points": "{}", "seed": "",
                                             "feedback": _error_feedback("internal"),
                                             "error": f"internal: the grading worker died ({type(error).__name__})"}
    out = []
    for entry, row in zip(entries, rows):
        out.append({"student": entry.student, "name": entry.name, "file": entry.file, **row, "in_roster": "",
                    "lms": entry.lms})
    return out


# ------------------------------------------------------------------ writing

def cell(value):
    """A CSV cell a spreadsheet shows as text: a leading = + - @ (or tab / CR) gets a quote."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def write_csv(path: Path, columns: list[str], rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow([cell(c) for c in columns])
        for row in rows:
            writer.writerow([cell(row.get(c, "")) for c in columns])
    return path


def _lesson_title(number: str) -> str:
    from .manifest import LESSONS
    lesson = next((l for l in LESSONS if f"{l.number:02d}" == number), None)
    return f"{number} {lesson.id}" if lesson else number


def _best(rows: list[dict]) -> dict[tuple[str, str], dict]:
    """(student, lesson) -> the row with the best score among the graded ones."""
    best: dict[tuple[str, str], dict] = {}
    for row in rows:
        if row["lesson"] and not row["error"]:
            key = (row["student"], row["lesson"])
            if key not in best or int(row["score"]) > int(best[key]["score"]):
                best[key] = row
    return best


def _notes(rows: list[dict], student: str) -> list[str]:
    """Why a student's files were not graded, one short note each."""
    notes: dict[str, list[str]] = {}
    for row in rows:
        if row["student"] == student and row["error"]:
            notes.setdefault("no submission" if row["error"].startswith("missing") else row["feedback"],
                             []).append(row["file"])
    out = []
    for feedback, files in notes.items():
        files = [f for f in files if f]
        if not files:
            out.append(feedback)
        elif len(files) == 1:
            out.append(f"{files[0]}: {feedback}")
        else:
            out.append(f"{len(files)} files ({files[0]}, ...): {feedback}")
    return out


def _short(text: str) -> str:
    return text if len(text) <= FEEDBACK_CHARS else text[:FEEDBACK_CHARS - 1] + "…"


def wide_rows(rows: list[dict], lessons: list[str], maxima: dict[str, int | None],
              order: list[str]) -> tuple[list[str], dict[str, str], list[dict]]:
    """One row per student: the best graded score per lesson (0 when none), total, max total and
    a short feedback. Returns (columns, the lesson columns' headers, rows)."""
    headers = {n: f"{_lesson_title(n)} (/{maxima[n] if maxima[n] is not None else '?'})" for n in lessons}
    # the written answers' points: empty columns for the instructor (the answers: <out>_written.csv)
    by_hand = {f"{item} (/{points}, by hand)": item for n in lessons for item, points in lesson_written(n)}
    columns = ["student", "name", *headers.values(), *by_hand, "total", "max total", "feedback"]
    best = _best(rows)
    names: dict[str, str] = {}
    lms: dict[str, str] = {}
    for row in rows:
        names[row["student"]] = names.get(row["student"]) or row["name"]
        lms[row["student"]] = lms.get(row["student"]) or row.get("lms", "")
    out = []
    for student in order:
        line = {"student": student, "name": names.get(student, ""), "lms": lms.get(student, "")}
        scores = {n: int(best[(student, n)]["score"]) if (student, n) in best else 0 for n in lessons}
        for n in lessons:
            line[headers[n]] = scores[n]
        for header in by_hand:
            line[header] = ""
        line["total"] = sum(scores.values())
        line["max total"] = sum(m or 0 for m in maxima.values())
        graded = [f"{n}: {best[(student, n)]['feedback']}" for n in lessons if (student, n) in best]
        line["feedback"] = _short("; ".join(graded + _notes(rows, student)))
        out.append(line)
    return columns, headers, out


CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_COLUMNS = ["Identifier", "Full name", "Email address", "Grade", "Maximum Grade",
                  "Last modified (grade)", "Feedback comments"]


def canvas_rows(wide: list[dict], headers: dict[str, str], roster_rows: dict) -> tuple[list[str], list[dict]]:
    """Canvas gradebook import: the student columns of a Canvas gradebook export, then one
    assignment column per lesson, "Lesson NN: id" (rename it to an existing assignment's
    "Name (assignment id)" header to fill that assignment; else Canvas offers to create one)."""
    titles = {n: "Lesson " + _lesson_title(n).replace(" ", ": ", 1) for n in headers}
    out = []
    for line in wide:
        r = roster_rows.get(line["student"], {})
        student = line["student"]
        row = {"Student": r.get("Student") or line["name"] or student,
               "ID": r.get("ID") or (student if line["lms"] == "canvas" else ""),
               "SIS User ID": r.get("SIS User ID", ""), "SIS Login ID": r.get("SIS Login ID", ""),
               "Section": r.get("Section", "")}
        for n, header in headers.items():
            row[titles[n]] = line[header]
        out.append(row)
    return CANVAS_COLUMNS + list(titles.values()), out


def moodle_rows(rows: list[dict], wide: list[dict], lesson: str, maximum, roster_rows: dict,
                when: str) -> list[dict]:
    """Moodle's assignment grading worksheet (Upload grading worksheet) for one lesson: every
    student, the best score (0 when nothing was graded) and its feedback."""
    best = _best(rows)
    out = []
    for line in wide:
        student = line["student"]
        r = roster_rows.get(student, {})
        graded = best.get((student, lesson))
        feedback = graded["feedback"] if graded else "; ".join(_notes(rows, student)) or "nothing graded"
        identifier = f"Participant {student}" if line["lms"] == "moodle" and student.isdigit() else student
        out.append({"Identifier": r.get("Identifier") or identifier,
                    "Full name": r.get("Full name") or line["name"] or student,
                    "Email address": r.get("Email address", ""),
                    "Grade": int(graded["score"]) if graded else 0,
                    "Maximum Grade": maximum if maximum is not None else "",
                    "Last modified (grade)": when, "Feedback comments": _short(feedback)})
    return out


def histograms(rows: list[dict], lessons: list[str], maxima: dict, png: Path) -> Path:
    """One histogram of score / max per lesson, side by side in one PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = lessons or [""]
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.5), squeeze=False)
    for ax, lesson in zip(axes[0], panels):
        graded = [r for r in rows if r["lesson"] == lesson and not r["error"] and r["max"]]
        fractions = [int(r["score"]) / int(r["max"]) for r in graded]
        ax.hist(fractions, bins=[i / 10 for i in range(11)], edgecolor="black")
        ax.set_xlim(0, 1)
        ax.set_xlabel("score / max")
        ax.set_ylabel("submissions")
        others = sum(1 for r in rows if r["lesson"] == lesson and r["error"]) if lesson else len(rows)
        mean = sum(fractions) / len(fractions) if fractions else float("nan")
        title = f"lesson {_lesson_title(lesson)}" if lesson else "nothing graded"
        ax.set_title(f"{title}\n{len(graded)} graded, {others} not; mean {mean:.2f}", fontsize=9)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return png


def grade_class(folder, out, jobs: int | None = None, roster=None, id_column: str | None = None,
                seed: int | None = None, formats=(), **options) -> dict:
    """Grade every file of `folder`; write the long CSV at `out` and the rest next to it."""
    folder, out = Path(folder), Path(out)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ValueError(f"format: {', '.join(map(repr, unknown))} is not one of {', '.join(FORMATS)}")
    seed = secrets.randbelow(2**31) if seed is None else int(seed)
    roster_table = read_roster(roster, id_column) if roster else None   # fails before any grading
    entries = submissions(folder)
    # as root the learner processes see an empty folder here: nobody runs a classmate's answer
    options = {**options, "seed": seed, "hide": (str(folder.resolve()),)}
    rows = grade_entries(entries, jobs or os.cpu_count() or 1, options)

    lessons = sorted({r["lesson"] for r in rows if r["lesson"]})
    maxima = {n: lesson_max(n) for n in lessons}
    for row in rows:                      # an error row of a known lesson shows what it was worth
        if row["lesson"] and row["max"] == "":
            row["max"] = maxima[row["lesson"]] if maxima[row["lesson"]] is not None else ""

    roster_rows: dict[str, dict] = {}     # output student ID -> roster row
    missing, unmatched = [], []
    order = list(dict.fromkeys(r["student"] for r in sorted(rows, key=lambda r: (r["student"], r["file"]))))
    if roster_table is not None:
        found = match(roster_table, entries)
        for row in rows:
            r = found.get(row["student"])
            if r is None:
                row["in_roster"] = "no"
                unmatched.append(row["student"])
                continue
            row["student"] = r[roster_table.id_column]
            row["name"] = roster_table.name_of(r) or row["name"]
            row["in_roster"] = "yes"
            roster_rows[row["student"]] = r
        seen = {row["student"] for row in rows}
        for r in roster_table.rows:
            sid = r[roster_table.id_column]
            roster_rows.setdefault(sid, r)
            if sid in seen:
                continue
            missing.append(sid)
            for lesson in lessons or [""]:
                rows.append({"student": sid, "name": roster_table.name_of(r), "lesson": lesson, "file": "",
                             "score": 0, "max": maxima.get(lesson, "") if lesson else "", "points": "{}",
                             "feedback": "no submission", "error": "missing: no submission in the folder",
                             "seed": "", "in_roster": "yes"})
        roster_order = [r[roster_table.id_column] for r in roster_table.rows]
        extra = sorted({r["student"] for r in rows} - set(roster_order))
        order = list(dict.fromkeys(roster_order + extra))
    position = {s: i for i, s in enumerate(order)}
    rows.sort(key=lambda r: (position.get(r["student"], len(order)), r["lesson"], r["file"]))

    write_csv(out, COLUMNS, rows)
    wide_columns, headers, wide = wide_rows(rows, lessons, maxima, order)
    outputs = {"csv": out, "wide": write_csv(out.with_name(out.stem + "_wide.csv"), wide_columns, wide),
               "written": write_csv(out.with_name(out.stem + "_written.csv"), WRITTEN_COLUMNS, written_rows(rows))}
    for fmt in dict.fromkeys(formats):
        if fmt == "canvas":
            columns, table = canvas_rows(wide, headers, roster_rows)
            outputs["canvas"] = write_csv(out.with_name(out.stem + "_canvas.csv"), columns, table)
        elif fmt == "moodle":
            when = dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
            outputs["moodle"] = [write_csv(out.with_name(f"{out.stem}_moodle_{n}.csv"), MOODLE_COLUMNS,
                                           moodle_rows(rows, wide, n, maxima[n], roster_rows, when))
                                 for n in lessons]
        else:
            raise ValueError(f"format: {fmt!r} is not one of {', '.join(FORMATS)}")
    png = histograms(rows, lessons, maxima, out.with_suffix(".png"))
    graded = [r for r in rows if not r["error"] and r["max"] != ""]
    fractions = [int(r["score"]) / int(r["max"]) for r in graded if int(r["max"])]
    return {"rows": rows, **outputs, "histogram": png, "seed": seed, "graded": len(graded),
            "errors": len(rows) - len(graded) - len([r for r in rows if r["error"].startswith("missing")]),
            "missing": missing, "unmatched": sorted(set(unmatched)), "lessons": lessons,
            "mean_fraction": sum(fractions) / len(fractions) if fractions else float("nan")}


def cli(args) -> int:
    """`course grade-class`: grade, write, and print what was written and what needs a look."""
    import sys
    folder = args.submissions
    if not os.path.isdir(folder):
        print(f"course grade-class: {folder!r} is not a folder", file=sys.stderr)
        return 2
    try:
        result = grade_class(folder, args.out, jobs=args.jobs, roster=args.roster, id_column=args.id_column,
                             seed=args.seed, formats=args.formats, cell_timeout=args.cell_timeout,
                             item_timeout=args.item_timeout)
    except (RosterError, OSError, ValueError) as error:
        print(f"course grade-class: {error}", file=sys.stderr)
        return 2
    rows = result["rows"]
    print(f"{len(rows)} rows: {result['graded']} graded, {result['errors']} not gradable, "
          f"{len(result['missing'])} missing; mean score fraction {result['mean_fraction']:.3f}")
    for row in rows:
        if row["error"] and not row["error"].startswith(("missing", "not-a-notebook", "not-a-file", "empty")):
            print(f"  {row['student']} {row['file']}: {row['error'][:160]}")
    if result["missing"]:
        print(f"no submission from {len(result['missing'])} roster students: {', '.join(result['missing'][:20])}"
              + (" ..." if len(result["missing"]) > 20 else ""))
    if result["unmatched"]:
        print(f"not in the roster ({len(result['unmatched'])}): {', '.join(result['unmatched'][:20])}"
              + (" ..." if len(result["unmatched"]) > 20 else ""))
    print(f"seed {result['seed']} (regrade with --seed {result['seed']} for the same hidden cases)")
    written = [result["csv"], result["wide"], result.get("canvas"), *result.get("moodle", [])]
    print("grades: " + ", ".join(str(p) for p in written if p) + f"; histograms: {result['histogram']}")
    return 0
