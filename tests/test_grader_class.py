"""`course grade-class` on a mixed class (36 submissions as root, 18 as an ordinary user): blank,
solved, partly solved, hostile. The CSV and the histogram are written, every student gets what
their own notebook deserves (a hostile neighbour changes nothing), and the course's files and the
submissions are byte-identical."""
import csv
import hashlib
import os
import json
import subprocess
import sys

import nbformat

from course_tools import ROOT
from course_tools.grader.authoring import load_all
from course_tools.grader.notebook import GRADE_CALL
from tests.exercise00 import ANSWER, EXERCISE, FN, POINTS, SIGNATURE, UNMASKED, UNMASKED_ONLY, WRONG

EX00 = EXERCISE                                      # the fixture: a masked softmax, three items
EX04 = ROOT / "exercises" / "04_attention_complexity.ipynb"   # a second lesson in the same class


def _solution_answers(stem):
    exercise = nbformat.read(ROOT / "exercises" / stem, as_version=4)
    solution = {c.id: c.source for c in nbformat.read(ROOT / "solutions" / stem, as_version=4).cells}
    return [solution[c.id] for c in exercise.cells if "answer" in c.metadata.get("tags", [])]


SOLVED04 = _solution_answers(EX04.name)
MAX04 = sum(load_all()[i].points for c in nbformat.read(EX04, as_version=4).cells
            for i in GRADE_CALL.findall(c.source) if not load_all()[i].manual)
HOSTILE = [   # safe to grade as anyone: they can only hurt their own score
    "from course_lib.attention import scaled_dot_product_attention\n",
    SIGNATURE + "    while True:\n        pass\n",
    "import torch\nx = torch.ones(8 * 1024**3)\n",
]
# Only root can defend against these (a uid of its own, a process limit, the submissions' folder
# hidden): as an ordinary user they would really overwrite notebooks in /tmp and fork without bound.
HOSTILE_AS_ROOT = [
    "import glob\nfor f in glob.glob('/tmp/**/*.ipynb', recursive=True):\n    open(f, 'w').write('{}')\n" + WRONG,
    "import os\nwhile True:\n    os.fork()\n",
    # a classmate's solved notebook (s01 is "solved"): run its answer as one's own
    "import json\nexec(next(''.join(c['source']) for c in json.load(open({classmate!r}))['cells']\n"
    "     if 'answer' in c['metadata'].get('tags', [])))\n",
]
AS_ROOT = os.geteuid() == 0


def _write(folder, student, exercise, answer):
    """`answer`: None (blank), one source for every answer cell, or a list, one per answer cell."""
    nb = nbformat.read(exercise, as_version=4)
    answers = iter(answer if isinstance(answer, list) else [answer] * len(nb.cells))
    for cell in nb.cells:
        if "answer" in cell.metadata.get("tags", []) and answer is not None:
            cell.source = next(answers)
    (folder / student).mkdir()
    nbformat.write(nb, folder / student / exercise.name)


def _digest(paths):
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def test_grade_class_on_a_mixed_class_with_every_hostile_submission(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    expected = {}
    classmate = folder / "s01" / EX00.name
    hostile = HOSTILE + [h.replace("{classmate!r}", repr(str(classmate))) for h in HOSTILE_AS_ROOT] * AS_ROOT
    if not AS_ROOT:
        print("grade-class: the attacks only root defends (overwriting /tmp, a fork bomb, reading a classmate's "
              "notebook) are not run: as an ordinary user the learner's process runs as you")
    # six kinds of submission, in rounds of six until every hostile one has been in the class:
    # 36 students as root, 18 as an ordinary user
    size = 6 * len(hostile)
    for i in range(size):
        student = f"s{i:02d}"
        kind = ["blank", "solved", "partial", "hostile", "solved04", "blank04"][i % 6]
        if kind == "blank":
            _write(folder, student, EX00, None); expected[student] = ("00", 0)
        elif kind == "solved":
            _write(folder, student, EX00, ANSWER); expected[student] = ("00", sum(POINTS.values()))
        elif kind == "partial":
            _write(folder, student, EX00, UNMASKED_ONLY); expected[student] = ("00", POINTS[UNMASKED])
        elif kind == "hostile":
            _write(folder, student, EX00, hostile[(i // 6) % len(hostile)]); expected[student] = ("00", 0)
        elif kind == "solved04":
            _write(folder, student, EX04, SOLVED04); expected[student] = ("04", MAX04)
        else:
            _write(folder, student, EX04, None); expected[student] = ("04", 0)
    submissions = sorted(folder.rglob("*.ipynb"))
    before = _digest(submissions)
    checks_before = _digest(sorted((ROOT / "course_tools" / "checks").glob("*.py")))
    out = tmp_path / "grades.csv"
    proc = subprocess.run([sys.executable, "-m", "course_tools.cli", "grade-class", str(folder), "--out", str(out),
                           "--jobs", "2", "--cell-timeout", "20", "--item-timeout", "4"],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == size and set(rows[0]) >= {"student", "lesson", "file", "score", "max", "points", "feedback",
                                                "error", "seed"}
    for row in rows:
        lesson, score = expected[row["student"]]
        assert (row["lesson"], int(row["score"]), row["error"]) == (lesson, score, ""), row
        assert sum(json.loads(row["points"]).values()) == score
    assert out.with_suffix(".png").stat().st_size > 1000
    assert "mean score fraction" in proc.stdout
    assert _digest(submissions) == before, "a submission was changed by another one"
    after = _digest(sorted((ROOT / "course_tools" / "checks").glob("*.py")))
    assert not any(open(p, "rb").read() == b"{}" for p in after), "a check file was overwritten"
