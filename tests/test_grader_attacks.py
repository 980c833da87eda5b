"""Adversarial submissions: each attack class of issue 9 and the score it must get, plus the
honest variants (magics, added helper cells, renamed files) that must get full marks. (The kernel
escapes of issue 31 on exercises 07-25 are in test_shortcut_kernels.py.)

All submissions are graded once, in parallel, with short limits (a hostile item must cost its
per-item limit, not the outer one); the tests then read the reports."""
import hashlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import pytest

from course_tools import ROOT
from course_tools.grader import GradeError, grade
from tests.exercise00 import ANSWER, EXERCISE, FN, LOOPS_WHEN_MASKED, MAX, POINTS, SIGNATURE, UNMASKED, WRONG

ITEM_S, CELL_S = 4.0, 20.0
EX00 = EXERCISE      # the warm-up, a masked softmax: the fixture of the grader tests
EX04 = ROOT / "exercises" / "04_attention_complexity.ipynb"
EX13 = ROOT / "exercises" / "13_wordpiece_vs_bpe.ipynb"
AS_ROOT = os.geteuid() == 0
# What only root can defend: a uid of its own (read-only course, other submissions out of reach)
# and a process limit. As an ordinary user the learner's process runs as that user (README), so
# these attacks are neither run nor asserted: they would really change the files they aim at.
ROOT_ONLY = "needs root: as an ordinary user the learner's process runs as you and can write your files"


SOLVED = ANSWER
MARKER = "1234.5"   # the detached grandchild's `sleep` argument, to find it afterwards


def _notebook(exercise, answer, added=(), name=None, edit=None):
    nb = nbformat.read(exercise, as_version=4)
    for cell in nb.cells:
        if "answer" in cell.metadata.get("tags", []):
            cell.source = answer
    for after_answer in added:   # learner-added cells right after the answer cell
        index = next(i for i, c in enumerate(nb.cells) if "answer" in c.metadata.get("tags", []))
        nb.cells.insert(index + 1, nbformat.v4.new_code_cell(after_answer))
    if edit:
        edit(nb)
    return nb, name or exercise.name


def _attacks(victim: Path, course_victim: Path):
    """name -> (notebook, file name, expected points per item or a callable on the report)."""
    loop = LOOPS_WHEN_MASKED
    return {
        # --- reference import and built-in shortcuts (static and dynamic detection)
        # (the course's attention returns its weights: a masked softmax, forbidden in exercise 00)
        "reference-import": _notebook(EX00, f"from course_lib.attention import scaled_dot_product_attention as {FN}\n"),
        "reference-alias": _notebook(EX00, "import torch, course_lib.attention as A\n" + SIGNATURE
                                     + "    eye = torch.eye(x.shape[-1]) * x.shape[-1] ** 0.5\n"
                                     "    return A.scaled_dot_product_attention(x, eye, eye, mask)[1]\n"),
        "reference-importlib": _notebook(EX00, "import importlib\n"
                                         f"{FN} = importlib.import_module("
                                         "'course_lib.attention').scaled_dot_product_attention\n"),
        "reference-dynamic": _notebook(EX00, "import builtins, course_lib.attention as A\n"
                                       "builtins.helper = A.scaled_dot_product_attention\n" + SIGNATURE
                                       + "    return helper(x, x, x, mask)[1]\n"),
        "builtin-F": _notebook(EX00, "import torch.nn.functional as F\n" + SIGNATURE
                               + "    return F.softmax(x if mask is None else x.masked_fill(~mask, -1e9), dim=-1)\n"),
        "builtin-softmax": _notebook(EX00, "import torch\n" + SIGNATURE + "    return torch.softmax(x, -1)\n"),
        "builtin-method": _notebook(EX00, SIGNATURE + "    return x.softmax(dim=-1)\n"),
        "builtin-dynamic": _notebook(EX00, "import builtins, torch\nbuiltins.sm = torch.softmax\n"
                                     + SIGNATURE + "    return sm(x, dim=-1)\n"),
        # --- the kernel behind a forbidden built-in, reached where no name shows (issue 31): from a
        # worker thread started outside the graded code, through a dict of torch.ops.aten overloads
        "builtin-thread": _notebook(EX00, "import queue, threading, torch\n"
                                    "_jobs, _done = queue.Queue(), queue.Queue()\n"
                                    "def _serve():\n    while True:\n        _done.put(torch.softmax(_jobs.get(), dim=-1))\n"
                                    "threading.Thread(target=_serve, daemon=True).start()\n"
                                    + SIGNATURE + "    _jobs.put(x)\n    return _done.get()\n"),
        "builtin-ops-aten": _notebook(EX00, "import torch\n_K = {}\n"
                                      "_K.update(sm=getattr(torch.ops.aten, '_soft' + 'max').default)\n"
                                      + SIGNATURE + "    return _K['sm'](x, -1, False)\n"),
        # --- monkeypatching torch or the grading helpers in the learner's process
        "patch-torch": _notebook(EX00, WRONG + "import torch\ntorch.allclose = lambda *a, **k: True\n"
                                 "torch.Tensor.__eq__ = lambda *a: True\n"),
        "patch-grading": _notebook(EX00, WRONG + "import course_tools.grading as g, sys\n"
                                   "g.check = lambda *a, **k: None\n"
                                   "for m in list(sys.modules.values()):\n"
                                   "    if getattr(m, '__name__', '').startswith('course_tools'):\n"
                                   "        m.__dict__['expect_close'] = lambda *a, **k: None\n"),
        # --- frame / gc introspection: nothing to find in this process
        "frame-introspection": _notebook(EX04, "import inspect\n"
                                         "def cross_attention_flops(n_q, n_kv, d):\n"
                                         "    f = inspect.currentframe().f_back\n"
                                         "    return f.f_locals.get('expected', -1) if f else -1\n"),
        "gc-introspection": _notebook(EX00, WRONG + "import gc\n_found = [o for o in gc.get_objects() "
                                      "if isinstance(o, dict) and 'nonce' in o]\n"),
        # --- always-equal objects: rebuilt as plain data in the grader
        "tensor-subclass": _notebook(EX00, "import torch\n"
                                     "class Yes(torch.Tensor):\n"
                                     "    @classmethod\n"
                                     "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                                     "        return True\n" + SIGNATURE
                                     + "    return torch.zeros(x.shape).as_subclass(Yes)\n"),
        "list-subclass": _notebook(EX13, "class Yes(list):\n    def __eq__(self, other):\n        return True\n"
                                   "    __hash__ = None\n"
                                   "def unigram_segment(word, log_probs, unk_token='[UNK]'):\n"
                                   "    return Yes(['?'])\n"),
        # --- signals and long C calls: the watchdog is outside
        "signal-loop": _notebook(EX00, "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                                 + SIGNATURE + "    while True:\n        pass\n"),
        "long-c-call": _notebook(EX00, SIGNATURE + "    return sum(range(10**12))\n"),
        "infinite-loop-some-items": _notebook(EX00, loop),
        # --- forks that detach
        "fork-setsid": _notebook(EX00, SOLVED + "\nimport os\nif os.fork() == 0:\n    os.setsid()\n"
                                 f"    os.execv('/bin/sleep', ['sleep', '{MARKER}'])\n"),
        # --- memory and output floods
        "memory-flood": _notebook(EX00, "import torch\n" + SIGNATURE
                                  + "    big = torch.ones(4 * 1024**3)\n    return big + big\n"),
        "output-flood": _notebook(EX00, SOLVED + "\nimport sys\nfor _ in range(200):\n"
                                  "    sys.stdout.write('RESULT x {\"points\": 1000}\\n' * 5000)\n"
                                  "sys.stdout.buffer.write(b'\\xff\\xfe' * 1000)\n"),
        "reply-flood": _notebook(EX00, "import torch\n" + SIGNATURE + "    return torch.zeros(40_000_000)\n"),
        # --- writes to course files and to another submission
        "write-files": _notebook(EX00, WRONG + "for target in (%r, %r):\n"
                                 "    try:\n        open(target, 'a').write('\\n# pwned\\n')\n"
                                 "    except OSError:\n        pass\n" % (str(course_victim), str(victim))),
        # --- forged or malformed result output on the reply pipe
        "forged-pipe": _notebook(EX00, "import os, struct\n" + SIGNATURE
                                 + "    for fd in range(3, 40):\n"
                                 "        try:\n"
                                 "            os.write(fd, struct.pack('>Q', 12) + b'\\x00\\x00\\x00\\x08{\"ok\":5}')\n"
                                 "        except OSError:\n            pass\n"
                                 "    return None\n"),
        "forged-stdout": _notebook(EX00, WRONG + "print('RESULT 0000 {\"id\": \"" + UNMASKED + "\", "
                                   "\"points\": -1000, \"passed\": true, \"feedback\": \"\"}')\n"),
        # --- honest variants: full marks
        "honest-magic": _notebook(EX00, "%%time\n" + SOLVED),
        "honest-timeit": _notebook(EX00, SOLVED + "\nimport torch\n%timeit -n 1 -r 1 torch.zeros(1)\n"),
        "honest-helper-cell": _notebook(
            EX00, SIGNATURE + "    return _helper(x, mask, *args, **kwargs)\n",
            added=[SOLVED.replace(f"def {FN}(", "def _helper(")]),
        "honest-renamed": _notebook(EX00, SOLVED, name="00_welcome (1).ipynb"),
        "honest-renamed-free": _notebook(EX00, SOLVED, name="my homework.ipynb"),
        "honest-compare-with-course": _notebook(
            EX00, SOLVED, added=["from course_lib.attention import scaled_dot_product_attention as ref\n"
                                 "import torch\nq = torch.randn(2, 3, 4)\n"
                                 f"assert torch.allclose({FN}(q), ref(q, q * 2, q)[1], atol=1e-5) or True\n"]),
    }


def _grade(path):
    started = time.monotonic()
    try:
        report = grade(path, cell_timeout=CELL_S, item_timeout=ITEM_S)
    except GradeError as error:
        report = error.as_json()
    report["seconds"] = time.monotonic() - started
    return report


def _hashes():
    files = [p for d in ("course_tools", "course_lib", "exercises", "solutions") for p in (ROOT / d).rglob("*.py")]
    files += list((ROOT / "exercises").glob("*.ipynb"))
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _leftovers():
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd[:2] == [b"sleep", MARKER.encode()]:
            out.append(int(pid))
    return out


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("attacks")
    victim = folder / "victim" / "00_welcome.ipynb"
    victim.parent.mkdir()
    nbformat.write(_notebook(EX00, SOLVED)[0], victim)
    victim_bytes = victim.read_bytes()
    # the course file the write-files attack aims at: as root one the test creates inside the
    # (read-only for the learner) course; otherwise a throw-away file - never a tracked one
    course_victim = (ROOT / "build" if AS_ROOT else folder) / f"attack-victim-{os.getpid()}.py"
    course_victim.parent.mkdir(exist_ok=True)
    course_victim.write_text("# a course file\n")
    before = _hashes()
    paths = {}
    for name, (nb, file_name) in _attacks(victim, course_victim).items():
        (folder / name).mkdir()
        paths[name] = folder / name / file_name
        nbformat.write(nb, paths[name])
    names = list(paths)
    try:
        with ProcessPoolExecutor(2) as pool:
            reports = dict(zip(names, pool.map(_grade, [str(paths[n]) for n in names])))
        reports["_victim_after"] = _grade(str(victim))
        course_victim_unchanged = b"# pwned" not in course_victim.read_bytes()
    finally:
        course_victim.unlink()
    after = _hashes()   # other people may edit the checkout meanwhile: look for the attack's mark
    changed = [f for f in before if after.get(f) != before[f] and b"# pwned" in Path(f).read_bytes()]
    return {"reports": reports, "course_unchanged": not changed, "course_victim_unchanged": course_victim_unchanged,
            "victim_unchanged": victim.read_bytes() == victim_bytes, "leftovers": _leftovers()}


def _points(report):
    return [i["points"] for i in report["items"]]


ZERO = ["reference-import", "reference-alias", "reference-importlib", "reference-dynamic", "builtin-F",
        "builtin-softmax", "builtin-method", "builtin-dynamic", "builtin-thread", "builtin-ops-aten",
        "patch-torch", "patch-grading",
        "frame-introspection", "gc-introspection", "tensor-subclass", "list-subclass", "signal-loop",
        "long-c-call", "memory-flood", "reply-flood", "write-files", "forged-pipe", "forged-stdout"]


@pytest.mark.parametrize("name", ZERO)
def test_attack_scores_zero(graded, name):
    report = graded["reports"][name]
    assert "items" in report, report
    assert report["score"] == 0 and set(_points(report)) == {0}, report
    # a hostile item costs about its own limit, never the outer one
    assert report["seconds"] < CELL_S * 2 + ITEM_S * len(report["items"]) + 60, report["seconds"]


@pytest.mark.parametrize("name,words", [("reference-import", "course_lib.attention.scaled_dot_product_attention"),
                                        ("reference-alias", "asks you to write it yourself"),
                                        ("reference-importlib", "importlib"),
                                        ("reference-dynamic", "asks you not to use"),
                                        ("builtin-F", "torch.nn.functional.softmax"),
                                        ("builtin-softmax", "torch.softmax"),
                                        ("builtin-method", "Tensor.softmax"),
                                        ("builtin-dynamic", "asks you not to use"),
                                        ("builtin-thread", "aten::softmax (the kernel of torch.nn.functional.softmax)"),
                                        ("builtin-ops-aten", "aten::_softmax (the kernel of torch.nn.functional.softmax)"),
                                        ("signal-loop", "longer than"),
                                        ("long-c-call", "longer than")])
def test_feedback_says_why(graded, name, words):
    assert all(words in i["feedback"] for i in graded["reports"][name]["items"]), graded["reports"][name]


def test_loop_in_some_items_costs_only_those(graded):
    report = graded["reports"]["infinite-loop-some-items"]
    assert _points(report) == [POINTS[UNMASKED], 0, 0], report


@pytest.mark.parametrize("name", ["honest-magic", "honest-timeit", "honest-helper-cell", "honest-renamed",
                                  "honest-renamed-free", "honest-compare-with-course", "fork-setsid",
                                  "output-flood"])
def test_honest_and_harmless_variants_get_full_marks(graded, name):
    report = graded["reports"][name]
    assert report.get("score") == report.get("max_score") == MAX, report


def test_no_process_left_and_no_tracked_file_changed(graded):
    assert graded["leftovers"] == []
    assert graded["course_unchanged"], "a course file changed while grading hostile submissions"


def test_learner_cannot_write_the_course_or_another_submission(graded):
    if not AS_ROOT:
        pytest.skip(ROOT_ONLY)
    assert graded["course_victim_unchanged"], "the learner's process wrote a file of the course"
    assert graded["victim_unchanged"], "another student's submission changed"
    assert graded["reports"]["_victim_after"]["score"] == MAX


def test_feedback_never_carries_the_environment(graded, monkeypatch):
    text = json.dumps(graded["reports"])
    assert os.environ.get("HOME", "/root") not in text.replace("/home", "")


# ------------------------------------------------------------------ malformed notebooks

def _cli(path):
    return subprocess.run([sys.executable, "-m", "course_tools.cli", "grade", str(path), "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


BAD = {
    "invalid-json": b"{not json",
    "invalid-utf8": b'{"nbformat": 4, "cells": [], "metadata": {"x": "\xff"}}',
    "nbformat-3": json.dumps({"nbformat": 3, "cells": [], "metadata": {}}).encode(),
    "cells-not-list": json.dumps({"nbformat": 4, "cells": {}, "metadata": {}}).encode(),
    "bad-source": json.dumps({"nbformat": 4, "metadata": {"course": {"lesson": 1}},
                              "cells": [{"cell_type": "code", "source": 5}]}).encode(),
    "bad-tags": json.dumps({"nbformat": 4, "metadata": {"course": {"lesson": 1}},
                            "cells": [{"cell_type": "code", "source": "", "metadata": {"tags": "answer"}}]}).encode(),
    "no-lesson": json.dumps({"nbformat": 4, "metadata": {}, "nbformat_minor": 5, "cells": []}).encode(),
    "unknown-lesson": json.dumps({"nbformat": 4, "metadata": {"course": {"lesson": 99}}, "cells": []}).encode(),
    "top-level-list": b"[1, 2, 3]",
    "deep-nesting": b"[" * 100000 + b"]" * 100000,
}


@pytest.mark.parametrize("name", list(BAD))
def test_malformed_notebook_is_one_json_error(tmp_path, name):
    path = tmp_path / "submission.ipynb"
    path.write_bytes(BAD[name])
    with pytest.raises(GradeError):
        grade(path)


def test_cli_paths_that_are_not_notebooks(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    link = tmp_path / "link.ipynb"
    link.symlink_to(secret)
    big = tmp_path / "big.ipynb"
    big.write_bytes(b" " * (9 * 1024**2))
    for path in ("", ".", "..", tmp_path, link, big, tmp_path / "missing.ipynb", secret):
        proc = _cli(path)
        assert proc.returncode == 2, (path, proc.stdout, proc.stderr)
        error = json.loads(proc.stdout)["error"]
        assert set(error) == {"code", "message"}
        assert "Traceback" not in proc.stderr and "TOP-SECRET" not in proc.stdout + proc.stderr
