"""The class gradebook's CSV exports, byte for byte: the long CSV, the wide CSV (the best graded
score per student and lesson: a pivot), the Canvas import, the Moodle grading worksheets and the
written answers, for a fixed set of rows (a student with several files and a tie, an error row, a
missing student, a formula-like name, a student in the order with no row at all). The expected
texts were written by the gradebook before it became the `course_tools.lms` package; the
whole-class tests (test_gradebook.py) grade real notebooks but do not pin these files."""
from __future__ import annotations

import json

import pytest

from course_tools.lms.exports import (COLUMNS, MOODLE_COLUMNS, WRITTEN_COLUMNS, canvas_rows, moodle_rows,
                                      wide_rows, write_csv, written_rows)

# a written answer that starts like a formula, and a rubric point holding the separator
WRITTEN = json.dumps([{"id": "01.why-scale", "max_points": 2, "answer": "=the softmax saturates",
                       "rubric": ["names the cause", "gives | the effect"]}], ensure_ascii=False)


def row(student, name, lesson, file, score, mx, feedback, error="", lms="", written="[]", seed=7):
    return {"student": student, "name": name, "lesson": lesson, "file": file, "score": score, "max": mx,
            "points": "{}", "feedback": feedback, "error": error, "seed": seed if not error else "",
            "in_roster": "yes", "written": written, "lms": lms}


ROWS = [
    row("12345", "Müller, Erin", "00", "a.ipynb", 2, 3, "2/3 items passed; 00.x: wrong", lms="canvas"),
    row("12345", "Müller, Erin", "00", "b.ipynb", 3, 3, "all 3 items passed", lms="canvas"),
    row("12345", "", "00", "c.ipynb", 3, 3, "all 3 items passed (a tie: the first file is kept)", lms="canvas"),
    row("12345", "Müller, Erin", "", "d.zip", 0, "", "not a notebook", error="not-a-notebook: a .zip file",
        lms="canvas"),
    row("12345", "Müller, Erin", "01", "e.ipynb", 5, 7, "5/7 items passed; " + "x" * 400, lms="canvas",
        written=WRITTEN),
    row("23456", "Lee Ann", "01", "f.ipynb", "6", 7, "6/7 items passed", lms="moodle", written=WRITTEN),
    row("23456", "Lee Ann", "01", "g.ipynb", 4, 7, "4/7", lms="moodle"),
    row("34567", "Kim Bo", "", "h.txt", 0, "", "not a notebook", error="not-a-notebook: a .txt file"),
    row("34567", "Kim Bo", "", "i.txt", 0, "", "not a notebook", error="not-a-notebook: a .txt file"),
    row("34567", "Kim Bo", "", "j.py", 0, "", "not a notebook", error="not-a-notebook: a .py file"),
    row("56789", "Absent, Al", "00", "", 0, 3, "no submission", error="missing: no submission in the folder"),
    row("56789", "Absent, Al", "01", "", 0, 7, "no submission", error="missing: no submission in the folder"),
    row("=HYPERLINK(1)", "", "00", "-x.ipynb", 1, 3, "@1/3 items passed"),
    row("777", "Moodle Only", "00", "k.ipynb", 0, 3, "not started", lms="moodle"),
]
LESSONS = ["00", "01"]
MAXIMA = {"00": 3, "01": 7}
# the roster's order, then the others; "00000" has no row at all
ORDER = ["23456", "12345", "34567", "56789", "=HYPERLINK(1)", "777", "00000"]
ROSTER_ROWS = {"12345": {"Student": "Müller, Erin", "ID": "12345", "SIS User ID": "S1", "SIS Login ID": "emuller",
                         "Section": "A"},
               "23456": {"Identifier": "Participant 23456", "Full name": "Lee, Ann",
                         "Email address": "ann@example.org"}}
WHEN = "2026-01-02 03:04:05"


EXPECTED = {
    "wide": ('student,name,00 welcome (/3),01 scale-sqrt-dk (/7),"01.written (/2, by hand)",total,max total,feedba'
             'ck\n'
             '23456,Lee Ann,0,6,,6,10,01: 6/7 items passed\n'
             '12345,"Müller, Erin",3,5,,8,10,00: all 3 items passed; 01: 5/7 items passed; xxxxxxxxxxxxxxxxxxxxxxx'
             'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'
             'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'
             'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…\n'
             '34567,Kim Bo,0,0,,0,10,"3 files (h.txt, ...): not a notebook"\n'
             '56789,"Absent, Al",0,0,,0,10,no submission\n'
             "'=HYPERLINK(1),,1,0,,1,10,00: @1/3 items passed\n"
             '777,Moodle Only,0,0,,0,10,00: not started\n'
             '00000,,0,0,,0,10,\n'),
    "canvas": ('Student,ID,SIS User ID,SIS Login ID,Section,Lesson 00: welcome,Lesson 01: scale-sqrt-dk\n'
               'Lee Ann,,,,,0,6\n'
               '"Müller, Erin",12345,S1,emuller,A,3,5\n'
               'Kim Bo,,,,,0,0\n'
               '"Absent, Al",,,,,0,0\n'
               "'=HYPERLINK(1),,,,,1,0\n"
               'Moodle Only,,,,,0,0\n'
               '00000,,,,,0,0\n'),
    "moodle_00": ('Identifier,Full name,Email address,Grade,Maximum Grade,Last modified (grade),Feedback comments\n'
                  'Participant 23456,"Lee, Ann",ann@example.org,0,3,2026-01-02 03:04:05,nothing graded\n'
                  '12345,"Müller, Erin",,3,3,2026-01-02 03:04:05,all 3 items passed\n'
                  '34567,Kim Bo,,0,3,2026-01-02 03:04:05,"3 files (h.txt, ...): not a notebook"\n'
                  '56789,"Absent, Al",,0,3,2026-01-02 03:04:05,no submission\n'
                  "'=HYPERLINK(1),'=HYPERLINK(1),,1,3,2026-01-02 03:04:05,'@1/3 items passed\n"
                  'Participant 777,Moodle Only,,0,3,2026-01-02 03:04:05,not started\n'
                  '00000,00000,,0,3,2026-01-02 03:04:05,nothing graded\n'),
    "moodle_01": ('Identifier,Full name,Email address,Grade,Maximum Grade,Last modified (grade),Feedback comments\n'
                  'Participant 23456,"Lee, Ann",ann@example.org,6,7,2026-01-02 03:04:05,6/7 items passed\n'
                  '12345,"Müller, Erin",,5,7,2026-01-02 03:04:05,5/7 items passed; xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'
                  'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'
                  'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'
                  'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…\n'
                  '34567,Kim Bo,,0,7,2026-01-02 03:04:05,"3 files (h.txt, ...): not a notebook"\n'
                  '56789,"Absent, Al",,0,7,2026-01-02 03:04:05,no submission\n'
                  "'=HYPERLINK(1),'=HYPERLINK(1),,0,7,2026-01-02 03:04:05,nothing graded\n"
                  'Participant 777,Moodle Only,,0,7,2026-01-02 03:04:05,nothing graded\n'
                  '00000,00000,,0,7,2026-01-02 03:04:05,nothing graded\n'),
    "written": ('student,name,lesson,file,item,points,max,answer,rubric\n'
                '12345,"Müller, Erin",01,e.ipynb,01.why-scale,,2,\'=the softmax saturates,names the cause | gives | th'
                'e effect\n'
                "23456,Lee Ann,01,f.ipynb,01.why-scale,,2,'=the softmax saturates,names the cause | gives | the effec"
                't\n'),
    "long": ('student,name,lesson,file,score,max,points,feedback,error,seed,in_roster,written\n'
             '12345,"Müller, Erin",00,a.ipynb,2,3,{},2/3 items passed; 00.x: wrong,,7,yes,[]\n'
             '12345,"Müller, Erin",00,b.ipynb,3,3,{},all 3 items passed,,7,yes,[]\n'
             '12345,,00,c.ipynb,3,3,{},all 3 items passed (a tie: the first file is kept),,7,yes,[]\n'
             '12345,"Müller, Erin",,d.zip,0,,{},not a notebook,not-a-notebook: a .zip file,,yes,[]\n'
             '12345,"Müller, Erin",01,e.ipynb,5,7,{},5/7 items passed; xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'
             'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'
             'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'
             'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'
             'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx,,7,yes,"[{""id"": ""01.why-scale"", ""max_'
             'points"": 2, ""answer"": ""=the softmax saturates"", ""rubric"": [""names the cause"", ""gives | the'
             ' effect""]}]"\n'
             '23456,Lee Ann,01,f.ipynb,6,7,{},6/7 items passed,,7,yes,"[{""id"": ""01.why-scale"", ""max_points"":'
             ' 2, ""answer"": ""=the softmax saturates"", ""rubric"": [""names the cause"", ""gives | the effect""'
             ']}]"\n'
             '23456,Lee Ann,01,g.ipynb,4,7,{},4/7,,7,yes,[]\n'
             '34567,Kim Bo,,h.txt,0,,{},not a notebook,not-a-notebook: a .txt file,,yes,[]\n'
             '34567,Kim Bo,,i.txt,0,,{},not a notebook,not-a-notebook: a .txt file,,yes,[]\n'
             '34567,Kim Bo,,j.py,0,,{},not a notebook,not-a-notebook: a .py file,,yes,[]\n'
             '56789,"Absent, Al",00,,0,3,{},no submission,missing: no submission in the folder,,yes,[]\n'
             '56789,"Absent, Al",01,,0,7,{},no submission,missing: no submission in the folder,,yes,[]\n'
             "'=HYPERLINK(1),,00,'-x.ipynb,1,3,{},'@1/3 items passed,,7,yes,[]\n"
             '777,Moodle Only,00,k.ipynb,0,3,{},not started,,7,yes,[]\n'),
}


@pytest.fixture
def exports(tmp_path) -> dict[str, str]:
    rows = [dict(r) for r in ROWS]

    def text(name, columns, table):
        return write_csv(tmp_path / f"{name}.csv", columns, table).read_text(encoding="utf-8")

    columns, headers, wide = wide_rows(rows, LESSONS, MAXIMA, ORDER)
    out = {"wide": text("wide", columns, wide), "canvas": text("canvas", *canvas_rows(wide, headers, ROSTER_ROWS))}
    for n in LESSONS:
        out[f"moodle_{n}"] = text(f"moodle_{n}", MOODLE_COLUMNS,
                                  moodle_rows(rows, wide, n, MAXIMA[n], ROSTER_ROWS, WHEN))
    out["written"] = text("written", WRITTEN_COLUMNS, written_rows(rows))
    out["long"] = text("long", COLUMNS, rows)
    return out


@pytest.mark.parametrize("name", list(EXPECTED))
def test_the_exports_are_the_files_the_gradebook_wrote_before(exports, name):
    assert exports[name] == EXPECTED[name]


def test_a_class_with_nothing_graded_gets_a_row_of_zeros_per_student():
    """No graded row at all (an empty pivot): every student of the order still gets a row."""
    rows = [row("a", "", "", "a.txt", 0, "", "not a notebook", error="not-a-notebook: a .txt file"),
            row("b", "Bo", "00", "", 0, 3, "no submission", error="missing: no submission in the folder")]
    columns, headers, wide = wide_rows(rows, ["00"], {"00": 3}, ["a", "b", "c"])
    assert [(line["student"], line[headers["00"]], line["total"], line["feedback"]) for line in wide] == [
        ("a", 0, 0, "a.txt: not a notebook"), ("b", 0, 0, "no submission"), ("c", 0, 0, "")]
    assert written_rows(rows) == []
