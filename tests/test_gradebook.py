"""The gradebook an instructor uploads (issue 20): `course grade-class` on hostile folder trees
(a cp1252 name from a Windows zip, 200 empty files, symbolic-link loops) and on an LMS download
with a roster (Canvas and Moodle names, a .zip, a missing student), the wide and LMS formats, the
feedback column, formula-safe cells, and the recorded seed that regrades to identical rows.
The class runs grade 6 notebooks (4 of them twice, the two runs side by side), 2 workers each."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from course_tools import ROOT
from course_tools.lms.discovery import submissions
from course_tools.lms.exports import cell, write_csv
from course_tools.lms.names import LmsName, lms_name, readable
from course_tools.lms.roster import RosterError, match, read_roster
from course_tools.grader import item_seed
from course_tools.grader.authoring import load_all
from tests.exercise00 import POINTS as POINTS00

pytestmark = pytest.mark.grader

EX00 = ROOT / "exercises" / "00_welcome.ipynb"
EX01 = ROOT / "exercises" / "01_scale_sqrt_dk.ipynb"


def _answers(stem):
    exercise = nbformat.read(ROOT / "exercises" / stem, as_version=4)
    solution = {c.id: c.source for c in nbformat.read(ROOT / "solutions" / stem, as_version=4).cells}
    return [solution[c.id] for c in exercise.cells if "answer" in c.metadata.get("tags", [])]


SOFTMAX = _answers("00_welcome.ipynb")[0]
MAX00 = sum(POINTS00.values())                    # the warm-up: three items of one point
SOLVED01 = _answers("01_scale_sqrt_dk.ipynb")      # every answer cell of exercise 01, solved
# wrong on every case: the first failing case's shape (in the feedback) is drawn from the seed, so
# identical feedback on a regrade shows the seed was honoured
WRONG_SOFTMAX = "def softmax(x, mask=None):\n    e = (x - x.max(-1, keepdim=True).values).exp()\n    return e / e.sum(-1, keepdim=True) + 0.5\n"


def _notebook(path: Path, exercise: Path, answer: str | list[str] | None) -> Path:
    nb = nbformat.read(exercise, as_version=4)
    if answer is not None:
        answers = [answer] if isinstance(answer, str) else answer
        for c, source in zip([c for c in nb.cells if "answer" in c.metadata.get("tags", [])], answers):
            c.source = source
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def _grade_class(folder, out, *extra):
    return subprocess.run([sys.executable, "-m", "course_tools.cli", "grade-class", str(folder), "--out", str(out),
                           "--jobs", "2", "--cell-timeout", "30", "--item-timeout", "10", *map(str, extra)],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)


def _rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# ------------------------------------------------------------------ names, cells, rosters (no grading)

@pytest.mark.parametrize("name, is_dir, expected", [
    ("muellererin_12345_67890_01_scale_sqrt_dk.ipynb", False,
     LmsName("12345", "muellererin", "canvas", "01_scale_sqrt_dk.ipynb")),
    ("erin_12345_678_01_scale_sqrt_dk-2.ipynb", False,
     LmsName("12345", "erin", "canvas", "01_scale_sqrt_dk-2.ipynb")),
    ("leeann_late_23456_789_homework.zip", False, LmsName("23456", "leeann", "canvas", "homework.zip")),
    ("Erin Müller_4321_assignsubmission_file_hw 1.ipynb", False,
     LmsName("4321", "Erin Müller", "moodle", "hw 1.ipynb")),
    ("Erin Müller_4321_assignsubmission_file_", True, LmsName("4321", "Erin Müller", "moodle", "")),
    ("alice", True, LmsName("alice", "", "", "alice")),
    ("alice.ipynb", False, LmsName("alice", "", "", "alice.ipynb")),
    ("01_scale_sqrt_dk (1).ipynb", False, LmsName("01_scale_sqrt_dk (1)", "", "", "01_scale_sqrt_dk (1).ipynb")),
])
def test_lms_download_names_map_to_student_ids(name, is_dir, expected):
    assert lms_name(name, is_dir) == expected


def test_names_that_are_not_utf8_are_read_as_cp1252_and_never_raise():
    assert readable(os.fsdecode(b"M\xfcller")) == "Müller"          # cp1252, from a Windows zip
    assert readable("Müller") == "Müller"                              # UTF-8 stays
    assert readable(os.fsdecode(b"x\x81\x8d\nz")) == "x\ufffd\ufffd?z"  # undefined in cp1252 too
    assert lms_name(os.fsdecode(b"M\xfcller_12_assignsubmission_file_a.ipynb")).name == "Müller"


def test_cells_a_spreadsheet_would_run_are_quoted(tmp_path):
    for bad in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", '=HYPERLINK("http://x","y")'):
        assert cell(bad) == "'" + bad
    assert cell("Müller") == "Müller" and cell(5) == 5 and cell("") == ""
    path = write_csv(tmp_path / "x.csv", ["student", "score"], [{"student": "=cmd|' /C calc'!A0", "score": 3}])
    assert _rows(path) == [{"student": "'=cmd|' /C calc'!A0", "score": "3"}]


def test_rosters_from_canvas_moodle_and_plain_csv(tmp_path):
    canvas = tmp_path / "canvas.csv"
    canvas.write_text("\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,HW 1 (99)\n"
                      "    Points Possible,,,,,5\n"
                      "\"Müller, Erin\",12345,S1,emuller,A,\n\"Lee, Ann\",23456,S2,alee,A,\n", encoding="utf-8")
    roster = read_roster(canvas)
    assert roster.id_column == "ID" and roster.name_column == "Student" and len(roster.rows) == 2
    found = match(roster, submissions(_canvas_tree(tmp_path / "c")))
    assert set(found) == {"12345"} and found["12345"]["SIS Login ID"] == "emuller"
    moodle = tmp_path / "moodle.csv"
    moodle.write_text("Identifier,Full name,Email address,Status,Grade\nParticipant 4321,Erin Müller,e@x.org,,\n",
                      encoding="cp1252")
    roster = read_roster(moodle)
    assert roster.id_column == "Identifier" and roster.rows[0]["Full name"] == "Erin Müller"
    folder = tmp_path / "m"
    _empty(folder / "Erin Müller_4321_assignsubmission_file_" / "hw.ipynb")
    found = match(roster, submissions(folder))
    assert found["4321"]["Identifier"] == "Participant 4321"
    plain = tmp_path / "plain.csv"
    plain.write_text("student_id,name\nerin,Erin Müller\n", encoding="utf-8")
    folder = tmp_path / "p"
    _empty(folder / "erin" / "a.ipynb")
    _empty(folder / "Erin Muller" / "b.ipynb")          # matched by name too (accents dropped)
    assert set(match(read_roster(plain), submissions(folder))) == {"erin", "Erin Muller"}
    (tmp_path / "bad.csv").write_text("foo,bar\n1,2\n")
    with pytest.raises(RosterError, match="--id-column"):
        read_roster(tmp_path / "bad.csv")
    assert read_roster(tmp_path / "bad.csv", id_column="foo").rows == [{"foo": "1", "bar": "2"}]


def _empty(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    return path


def _canvas_tree(folder: Path) -> Path:
    _empty(folder / "muellererin_12345_678_01_scale_sqrt_dk.ipynb")
    _empty(folder / "nobody_55555_679_x.ipynb")
    return folder


def test_walking_a_hostile_tree_lists_every_file_and_follows_no_link(tmp_path):
    folder = tmp_path / "class"
    _empty(folder / "a" / "deep" / "er" / "x.ipynb")
    _empty(folder / "a" / ".ipynb_checkpoints" / "x-checkpoint.ipynb")     # noise: no row
    _empty(folder / "a" / ".DS_Store")
    (folder / "a" / "up").symlink_to("..")                                 # a loop inside a student
    (folder / "loop").symlink_to("loop")                                   # a link to itself
    (folder / "one").symlink_to("two")
    (folder / "two").symlink_to("one")
    (folder / "empty").mkdir()
    entries = submissions(folder)
    assert [(e.student, e.file, e.problem.split(":")[0]) for e in entries] == [
        ("a", "a/up", "not-a-file"), ("a", "a/deep/er/x.ipynb", ""), ("empty", "empty", "empty"),
        ("loop", "loop", "not-a-file"), ("one", "one", "not-a-file"), ("two", "two", "not-a-file")]


def test_the_seed_gives_each_item_its_own_reproducible_cases():
    assert item_seed(7, "01.sdpa-masked") == item_seed(7, "01.sdpa-masked")
    assert len({item_seed(7, "01.sdpa-masked"), item_seed(8, "01.sdpa-masked"), item_seed(7, "01.sdpa-unmasked")}) == 3


# ------------------------------------------------------------------ whole classes

def test_a_cp1252_name_200_empty_files_and_link_loops_grade_with_exit_0(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    mueller = os.path.join(os.fsencode(folder), b"M\xfcller")   # a folder name from a Windows zip
    os.mkdir(mueller)
    _notebook(Path(os.fsdecode(mueller)) / "00_welcome.ipynb", EX00, SOFTMAX)
    for i in range(200):
        _empty(folder / "zz_empty" / f"e{i:03d}.ipynb")
    (folder / "loop").symlink_to("loop")
    (folder / "zz_empty" / "up").symlink_to("..")
    formula = folder / '=HYPERLINK("evil","x")'
    _notebook(formula / "nb.ipynb", EX00, None)
    out = tmp_path / "out" / "grades.csv"
    proc = _grade_class(folder, out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    rows = _rows(out)
    assert len(rows) == 1 + 200 + 1 + 1 + 1, len(rows)      # Müller, the empties, 2 links, the formula
    by_student = {}
    for row in rows:
        by_student.setdefault(row["student"], []).append(row)
    (mueller_row,) = by_student["Müller"]
    assert (mueller_row["lesson"], mueller_row["score"], mueller_row["max"], mueller_row["error"]) == \
        ("00", str(MAX00), str(MAX00), "")
    assert mueller_row["feedback"] == f"all {MAX00} items passed" and mueller_row["seed"].isdigit()
    empties = by_student["zz_empty"]
    assert len(empties) == 201 and all(r["error"] for r in empties)
    assert sum(r["error"].startswith("not-a-notebook") for r in empties) == 200
    (quoted,) = [r for s, rs in by_student.items() for r in rs if "HYPERLINK" in s]
    assert quoted["student"].startswith("'=") and quoted["feedback"].startswith("not started")
    assert by_student["loop"][0]["error"].startswith("not-a-file")
    assert out.with_suffix(".png").stat().st_size > 1000
    wide = _rows(out.with_name("grades_wide.csv"))
    assert {r["student"]: r["total"] for r in wide}["Müller"] == str(MAX00)


def test_roster_lms_names_formats_feedback_and_a_reproducible_regrade(tmp_path):
    folder = tmp_path / "download"
    folder.mkdir()
    _notebook(folder / "muellererin_12345_678_01_scale_sqrt_dk-2.ipynb", EX01, SOLVED01)       # Canvas, solved
    (folder / "leeann_late_23456_789_homework.zip").write_bytes(b"PK\x05\x06" + bytes(18))       # Canvas, a .zip
    _notebook(folder / "kimbo_34567_790_00_welcome.ipynb", EX00, None)                          # untouched
    _notebook(folder / "parkjo_45678_791_00_welcome.ipynb", EX00, "def softmax(x):\n    return (\n")  # syntax error
    _notebook(folder / "ortizam_67890_792_00_welcome.ipynb", EX00, WRONG_SOFTMAX)             # wrong on random cases
    (folder / "ghost_99999_793_notes.txt").write_text("hello")                                  # not in the roster
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section\n    Points Possible,,,,\n"
                      '"Müller, Erin",12345,S1,emuller,A\n"Lee, Ann",23456,S2,alee,A\n"Kim, Bo",34567,S3,bkim,B\n'
                      '"Park, Jo",45678,S4,jpark,B\n"Ortiz, Ama",67890,S6,aortiz,B\n"Absent, Al",56789,S5,aabsent,A\n',
                      encoding="utf-8")
    runs = {name: tmp_path / name / "grades.csv" for name in ("first", "regrade")}
    with ThreadPoolExecutor(2) as pool:      # the regrade runs beside the first run: 2 x 2 workers
        procs = dict(zip(runs, pool.map(lambda out: _grade_class(folder, out, "--roster", roster, "--seed", 7,
                                                                 "--format", "canvas", "--format", "moodle"),
                                        runs.values())))
    for proc in procs.values():
        assert proc.returncode == 0, proc.stderr[-3000:]
    out = runs["first"]
    first = procs["first"].stdout
    assert "56789" in first and "no submission" in first and "not in the roster (1): 99999" in first
    assert "seed 7" in first
    rows = _rows(out)
    assert _rows(runs["regrade"]) == rows, "a regrade with the same seed must give identical rows"
    by = {}
    for row in rows:
        by.setdefault(row["student"], []).append(row)
    assert list(by) == ["12345", "23456", "34567", "45678", "67890", "56789", "99999"]   # roster order, then others
    (solved,) = by["12345"]
    max01 = int(solved["max"])
    assert (solved["name"], solved["lesson"], solved["score"], solved["seed"], solved["in_roster"]) == \
        ("Müller, Erin", "01", str(max01), "7", "yes") and max01 > 1, solved
    points = json.loads(solved["points"])
    assert sum(points.values()) == max01 and all(i.startswith("01.") for i in points)
    assert solved["feedback"].startswith(f"all {len(points)} items passed")   # and the written one, by hand
    (zipped,) = by["23456"]
    assert zipped["error"].startswith("not-a-notebook") and ".zip" in zipped["error"] and zipped["feedback"]
    (blank,) = by["34567"]
    (syntax,) = by["45678"]
    assert blank["score"] == syntax["score"] == "0" and blank["error"] == syntax["error"] == ""
    assert blank["feedback"].startswith("not started")
    assert "SyntaxError" in syntax["feedback"] and "not started" not in syntax["feedback"]
    (wrong,) = by["67890"]
    assert wrong["score"] == "0" and "[random input of shape (" in wrong["feedback"], wrong
    assert [(r["lesson"], r["error"].split(":")[0], r["score"], r["max"]) for r in by["56789"]] == [
        ("00", "missing", "0", str(MAX00)), ("01", "missing", "0", str(max01))]
    assert by["99999"][0]["in_roster"] == "no"
    assert all(r["seed"] == "7" for r in rows if r["lesson"] and not r["error"])

    wide = {r["student"]: r for r in _rows(out.with_name("grades_wide.csv"))}
    assert list(wide) == list(by)
    lesson01 = f"01 scale-sqrt-dk (/{max01})"
    by_hand = [f"{i} (/{e.points}, by hand)" for i, e in sorted(load_all().items()) if i.startswith("01.") and e.manual]
    assert by_hand and list(wide["12345"]) == ["student", "name", f"00 welcome (/{MAX00})", lesson01, *by_hand, "total",
                                               "max total", "feedback"]
    assert (wide["12345"][lesson01], wide["12345"]["total"], wide["12345"]["max total"]) == \
        (str(max01), str(max01), str(max01 + MAX00))
    assert wide["67890"]["total"] == wrong["score"] and wide["56789"]["total"] == "0"
    assert all(r["feedback"] for r in wide.values())
    assert "no submission" in wide["56789"]["feedback"] and ".zip" in wide["23456"]["feedback"]

    canvas = {r["ID"]: r for r in _rows(out.with_name("grades_canvas.csv"))}
    assert list(next(iter(canvas.values()))) == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                                                 "Lesson 00: welcome", "Lesson 01: scale-sqrt-dk"]
    assert canvas["12345"]["Student"] == "Müller, Erin" and canvas["12345"]["SIS Login ID"] == "emuller"
    assert canvas["12345"]["Lesson 01: scale-sqrt-dk"] == str(max01) and canvas["56789"]["Lesson 01: scale-sqrt-dk"] == "0"
    moodle = _rows(out.with_name("grades_moodle_01.csv"))
    assert list(moodle[0]) == ["Identifier", "Full name", "Email address", "Grade", "Maximum Grade",
                               "Last modified (grade)", "Feedback comments"]
    assert {r["Identifier"]: r["Grade"] for r in moodle}["12345"] == str(max01)
    assert all(r["Maximum Grade"] == str(max01) and r["Feedback comments"] for r in moodle)
    assert out.with_suffix(".png").stat().st_size > 1000


def test_course_grade_records_a_cp1252_file_name_without_a_traceback(tmp_path, monkeypatch):
    from course_tools import progress
    monkeypatch.setenv(progress.GRADES_ENV, str(tmp_path / "grades.jsonl"))
    path = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"M\xfcller.ipynb"))
    report = {"score": 1, "max_score": 1, "items": [{"id": "00.softmax", "points": 1, "max_points": 1,
                                                     "passed": True, "feedback": ""}]}
    assert progress.record(report, path, 0) is not None
    entry = json.loads((tmp_path / "grades.jsonl").read_text(encoding="utf-8"))
    assert entry["exercise"] == "Müller.ipynb" and entry["lesson"] == "00"
