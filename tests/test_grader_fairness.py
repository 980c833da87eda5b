"""Issue 20: honest answers get full marks, the listed escapes score 0, weak answers lose the items
they get wrong, and grading is bounded and robust.

Each notebook is built from the *current* exercise and solution (the solution's answers with one
change), so the cases follow the exercises when they are redesigned; a case whose anchor is gone
fails and says so (rewrite it for the exercise as it is now, or delete it). They are graded once, in parallel, at the short limits the other grader tests
use (4 s per item: solutions must pass with that even where the check loads MiniLM or Hugging
Face models), and the tests read the reports. `python tests/test_grader_fairness.py [names]`
prints every case's points and feedback."""
import ast
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import pytest

from course_tools import ROOT
from course_tools.grader import GradeError, grade
from course_tools.grader.authoring import load_all
from course_tools import shortcuts
from course_tools.shortcuts import forbidden_for, shortcut_feedback, static_findings

pytestmark = pytest.mark.grader

ITEM_S, CELL_S = 4.0, 20.0
AS_ROOT = os.geteuid() == 0
REGISTRY = load_all()
DETECTED = ("not graded", "asks you not to use")      # static or dynamic detection, in the feedback


# ------------------------------------------------------------------ building notebooks from the current course

def _exercise(number: int) -> Path | None:
    return next(iter(sorted((ROOT / "exercises").glob(f"{number:02d}_*.ipynb"))), None)


def _answers(number: int) -> list[str]:
    """The official solution of each answer cell of exercise `number`, in order."""
    path = _exercise(number)
    exercise = nbformat.read(path, as_version=4)
    solution = nbformat.read(ROOT / "solutions" / path.name, as_version=4)
    by_id = {c.get("id"): c.source for c in solution.cells if c.get("id")}
    answers = [c for c in exercise.cells if "answer" in c.metadata.get("tags", [])]
    if all(c.get("id") in by_id for c in answers):
        return [by_id[c.get("id")] for c in answers]
    code = [c for c in solution.cells if c.cell_type == "code"]   # no ids: by position
    return [code[i].source for i, c in enumerate(c for c in exercise.cells if c.cell_type == "code")
            if "answer" in c.metadata.get("tags", [])]


def _items(number: int) -> list[str]:
    """The graded item ids of exercise `number`, in order."""
    nb = nbformat.read(_exercise(number), as_version=4)
    return [i for c in nb.cells if c.cell_type == "code"
            for i in re.findall(r"""^\s*check\(\s*["']([^"']+)["']""", c.source, re.M)]


def _defines(source: str) -> set[str]:
    try:
        return {n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    except SyntaxError:
        return set()


def _answer_index(number: int, name: str) -> int:
    if _exercise(number) is None:
        raise Skip(f"exercise {number:02d} is gone")
    found = [i for i, a in enumerate(_answers(number)) if name in _defines(a)]
    if not found or name not in _graded_names(number):
        raise Skip(f"exercise {number:02d} no longer grades {name} (redesigned)")
    return found[0]


class Skip(Exception):
    """The exercise changed (issue 19 redesigns exercises): this case no longer applies - the test
    fails and says so, for the case to be rewritten or deleted."""


def _notebook(number: int, replace=None, added=(), setup_extra="", edit=None):
    """Exercise `number` answered with the solution, except `replace` {answer index: source};
    `added`: cells the learner adds after the last answer; `setup_extra`: lines the learner adds to
    the provided set-up cell (the first code cell)."""
    path = _exercise(number)
    if path is None:
        raise Skip(f"exercise {number:02d} is gone")
    nb = nbformat.read(path, as_version=4)
    answers = _answers(number)
    for index, source in (replace or {}).items():
        answers[index] = source
    cells = [c for c in nb.cells if "answer" in c.metadata.get("tags", [])]
    for cell, source in zip(cells, answers):
        cell.source = source
    if setup_extra:
        setup = next(c for c in nb.cells if c.cell_type == "code")
        setup.source += "\n" + setup_extra
    last = max(i for i, c in enumerate(nb.cells) if "answer" in c.metadata.get("tags", []))
    for offset, source in enumerate(added):
        nb.cells.insert(last + 1 + offset, nbformat.v4.new_code_cell(source))
    if edit:
        edit(nb)
    return nb


def _swap(number: int, index: int, old: str, new: str) -> dict:
    """{index: the solution's answer `index` with `old` replaced by `new`} (Skip if `old` is gone)."""
    if _exercise(number) is None:
        raise Skip(f"exercise {number:02d} is gone")
    source = _answers(number)[index]
    if old not in source:
        raise Skip(f"exercise {number:02d}'s solution changed: {old.strip()[:50]!r} is gone")
    return {index: source.replace(old, new)}


def _graded_names(number: int) -> set[str]:
    return {n for i in _items(number) for n in REGISTRY[i].uses}


# ------------------------------------------------------------------ honest code: full marks

def _honest_constructs(number: int, name: str) -> str:
    """Code that the old static check refused although it is ordinary: docstrings naming the
    forbidden objects, getattr/setattr with computed names on one's own object, re.compile,
    .eval(), locals() and vars(self) - made part of what the graded object depends on."""
    mentions = ", ".join(sorted({f.replace(":", ".") for i in _items(number)
                                 for f in forbidden_for(i, REGISTRY[i].forbids)}))
    return f'''

import re


class _Parts:
    """Written by hand: a drop-in for {mentions}; no torch.nn.LayerNorm, torch.nn.Transformer."""

    def __init__(self):
        for i in range(3):
            setattr(self, f"layer{{i}}", i)
        self.total = sum(getattr(self, f"layer{{i}}") for i in range(3))
        self.pattern = re.compile(r"layer(\\d+)")
        self.names = sorted(vars(self))
        self.here = sorted(locals())

    def eval(self):
        return self


_PARTS = _Parts().eval()
{name}.__doc__ = f"{{{name}.__doc__ or ''}} ({{_PARTS.total}} parts)"
'''


def _with_constructs(number: int) -> dict:
    answers = _answers(number)
    graded = _graded_names(number)
    return {i: a + _honest_constructs(number, sorted(_defines(a) & graded)[0])
            for i, a in enumerate(answers) if _defines(a) & graded}


def _raising_value_error(count: int) -> list[int]:
    """Up to `count` exercises whose solution raises ValueError (a check expects it), light ones first."""
    numbers = [n for n in [12, 5, 6, 22, 3, 11, 15, 21] + list(range(26)) if _exercise(n)]
    found = [n for n in dict.fromkeys(numbers) if any("raise ValueError(" in a for a in _answers(n))]
    return found[:count]


def _value_error_subclass(rank: int):
    found = _raising_value_error(rank + 1)
    if len(found) <= rank:
        raise Skip("not enough solutions raise ValueError any more")
    number = found[rank]
    return _notebook(number, {i: "class AnswerError(ValueError):\n    \"\"\"Mine.\"\"\"\n\n\n"
                              + a.replace("raise ValueError(", "raise AnswerError(")
                              for i, a in enumerate(_answers(number)) if "raise ValueError(" in a})


def _numpy_in_setup(number: int):
    first = _answers(number)[0]
    return _notebook(number, {0: "_ZERO = np.zeros(1)   # numpy, imported in the set-up cell\n" + first},
                     setup_extra="import numpy as np")


ATTENTION_POOLING = '''import torch.nn.functional as F


def attention_pooling(hidden_states, attention_mask, query):
    """(B, T, H), (B, T), (H,) -> (B, H): einsum, 1 - mask, F.relu and .norm(), all ordinary torch."""
    padding = 1 - attention_mask.to(hidden_states.dtype)                 # 1 where padded
    keep = F.relu(1 - padding)                                           # 1 where real
    scores = torch.einsum("bth,h->bt", hidden_states, query).masked_fill(padding.bool(), float("-inf"))
    weights = torch.softmax(scores, dim=1) * keep
    pooled = torch.einsum("bt,bth->bh", weights, hidden_states)
    assert torch.isfinite(pooled.norm())
    return pooled
'''

PARITY_RE = '''import re

INPUTS = re.compile(r"input_ids|token_type_ids|attention_mask")     # what both models take from the batch


def parity_report(ours, theirs, batch):
    """[largest |ours - theirs| over the real tokens of each hidden state]: L + 1 floats."""
    inputs = {key: value for key, value in batch.items() if INPUTS.fullmatch(key)}
    ours.eval()
    theirs.eval()
    with torch.no_grad():
        mine = ours(**inputs, output_hidden_states=True).hidden_states
        ref = theirs(**inputs, output_hidden_states=True).hidden_states
    real = inputs["attention_mask"].bool()
    return [(a - b)[real].abs().max().item() for a, b in zip(mine, ref)]
'''


def _honest():
    """name -> (builder, expected: None for full marks)."""
    return {
        "03-computed-getattr-setattr-re-eval-locals-docstrings": lambda: _notebook(3, _with_constructs(3)),
        "07-docstrings-naming-nn-layernorm": lambda: _notebook(7, _with_constructs(7)),
        "11-docstrings-naming-nn-transformer-getattr": lambda: _notebook(11, _with_constructs(11)),
        "18-re-compile": lambda: _notebook(18, {_answer_index(18, "parity_report"): PARITY_RE}),
        "19-einsum-one-minus-mask-F-norm": lambda: _notebook(
            19, {_answer_index(19, "attention_pooling"): ATTENTION_POOLING}),
        "valueerror-subclass-first": lambda: _value_error_subclass(0),
        "valueerror-subclass-second": lambda: _value_error_subclass(1),
        "numpy-added-to-the-setup-cell": lambda: _numpy_in_setup(_light()),
        # the official solutions whose checks load MiniLM / Hugging Face models, at 4 s per item
        "18-solution": lambda: _notebook(18),
        "19-solution": lambda: _notebook(19),
        "23-solution": lambda: _notebook(23),
    }


# ------------------------------------------------------------------ escapes: 0, and detected

def _drop_in():
    """(lesson, graded name, "course_lib.module:name") of an exercise whose forbidden course
    function is a drop-in for the graded function (prefer lessons whose exercise is stable)."""
    order = [22, 21, 15, 12, 11, 5, 3] + list(range(26))
    for number in order:
        if _exercise(number) is None:
            continue
        for item in _items(number):
            for name in REGISTRY[item].uses:
                for spec in forbidden_for(item, REGISTRY[item].forbids):
                    module, _, qualname = spec.partition(":")
                    if module.startswith("course_lib.") and qualname == name:
                        if inspect.isfunction(getattr(importlib.import_module(module), qualname, None)):
                            return number, name, spec
    raise Skip("no exercise grades a drop-in of a course function any more")


def _drop_in_def(number: int, name: str, spec: str, body: str, call: str) -> str:
    """`def name(...)` with the graded function's parameters (the solution's), whose `body` lines end in
    `return call(...)` with the arguments the course function takes, by name: the course's function may
    take fewer (lesson 20's elmo_predictive_states has no attention_mask), and a call with the graded
    function's arguments would fail on the arity before the course's code ran."""
    module, _, qualname = spec.partition(":")
    course = inspect.signature(getattr(importlib.import_module(module), qualname))
    answer = _answers(number)[_answer_index(number, name)]
    node = next(n for n in ast.parse(answer).body if isinstance(n, ast.FunctionDef) and n.name == name)
    mine = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
    passed = ", ".join(f"{p}={p}" for p in course.parameters if p in mine)
    return f"def {name}({ast.unparse(node.args)}):\n{body}    return {call}({passed})\n"


def _copy_route(kind: str):
    number, name, spec = _drop_in()
    module, _, qualname = spec.partition(":")
    file = module.split(".", 1)[1].replace(".", "/") + ".py"
    if kind == "exec":    # the course's file, read and executed, one line added: a copy, lines shifted
        make = f'''import builtins, pathlib, re, course_lib
_source = (pathlib.Path(course_lib.__file__).parent / {file!r}).read_text()
_source = re.sub(r"^from \\.(\\w+)", r"from course_lib.\\1", _source, flags=re.M)
_source = re.sub(r"^from \\. import", "from course_lib import", _source, flags=re.M)
_source = re.sub(r"^(from __future__ import annotations)$", r"\\1\\nimport os", _source, count=1, flags=re.M)
_namespace = {{"__name__": "__main__"}}
exec(_source, _namespace)
builtins._copied = _namespace[{qualname!r}]
'''
    elif kind == "code":  # the course's code object under another name
        make = f'''import builtins, types
from {module} import {qualname} as _ref
builtins._copied = types.FunctionType(_ref.__code__.replace(co_name="mine", co_qualname="mine"),
                                      _ref.__globals__, "mine", _ref.__defaults__, _ref.__closure__)
builtins._copied.__kwdefaults__ = _ref.__kwdefaults__
'''
    answer = make + "\n\n" + _drop_in_def(number, name, spec, "", "_copied")
    return number, name, _notebook(number, {_answer_index(number, name): answer})


def _in_place(number: int):
    """The solution, which then changes its inputs (tensors, lists) in place: the answer itself is
    right, but a check that compares its inputs before and after the call must see the change."""
    path = _exercise(number)
    if path is None or not any("modified" in line for line in
                               (ROOT / "course_tools" / "checks" / f"lesson{number:02d}.py").read_text().splitlines()):
        raise Skip(f"exercise {number:02d}'s checks no longer look at their inputs after the call")
    answers, replace, names = _answers(number), {}, []
    for name in sorted(_graded_names(number)):
        index = next((i for i, a in enumerate(answers) if re.search(rf"^def {name}\(", a, re.M)), None)
        if index is None:    # (a class: its inputs are not spoiled here)
            continue
        names.append(name)
        source = re.sub(rf"^def {name}\(", f"def _solution_{name}(", replace.get(index, answers[index]), flags=re.M)
        replace[index] = source + f'''

import torch


def {name}(*args, **kwargs):
    out = _solution_{name}(*args, **kwargs)
    for value in list(args) + list(kwargs.values()):      # then spoil the inputs, in place
        if isinstance(value, torch.Tensor) and value.numel() and not isinstance(value, torch.nn.Parameter):
            value.logical_not_() if value.dtype == torch.bool else value.add_(1)
        elif isinstance(value, list) and value:
            value.append(value[0])
    return out
'''
    if not names:
        raise Skip(f"exercise {number:02d} grades no function any more")
    return _notebook(number, replace), names[0]


def _import_inside(number, name, spec):
    module, _, qualname = spec.partition(":")
    package, _, leaf = module.rpartition(".")
    body = f"    import sys\n    sys.setprofile(None)\n    from {package} import {leaf}\n"
    return _notebook(number, {_answer_index(number, name): _drop_in_def(number, name, spec, body,
                                                                        f"{leaf}.{qualname}")})


def _escapes():
    """name -> builder returning (notebook, the graded name whose items must score 0)."""
    def copy(kind):
        def build():
            number, name, nb = _copy_route(kind)
            return nb, name
        return build

    def inside():
        number, name, spec = _drop_in()
        return _import_inside(number, name, spec), name

    def disabled():   # a torch built-in called under DisableTorchFunction, hidden from the AST
        if "softmax" not in _graded_names(0):
            raise Skip("exercise 00 no longer grades softmax")
        return _notebook(0, {_answer_index(0, "softmax"): '''import builtins
builtins._fused, builtins._off = torch.softmax, torch._C.DisableTorchFunction


def softmax(x, mask=None):
    with _off():
        return _fused(x if mask is None else x.masked_fill(~mask, float("-inf")), dim=-1)
'''}), "softmax"

    def in_place(number):
        def build():
            return _in_place(number)
        return build

    out = {"exec-of-the-course-file": copy("exec"), "renamed-code-object": copy("code"),
           "import-inside-the-function-after-setprofile-none": inside,
           "00-builtin-under-disable-torch-function": disabled,
           "15-in-place": in_place(15), "21-in-place": in_place(21)}
    if AS_ROOT:   # as an ordinary user the learner's process runs as you: solutions/ is yours to read
        def read_solution():
            number, name, _ = _drop_in()
            stem = _exercise(number).name
            return _notebook(number, {_answer_index(number, name): f'''import json, pathlib, course_lib
_path = pathlib.Path(course_lib.__file__).parent.parent / "solutions" / {stem!r}
_cells = json.loads(_path.read_text())["cells"]
exec(next("".join(c["source"]) for c in _cells if "def {name}" in "".join(c["source"])))
'''}), name
        out["read-the-solution"] = read_solution
    return out


# ------------------------------------------------------------------ weak answers: 0 on the items they get wrong

def _weak():
    """name -> (builder, {item: points} for the items whose points are known)."""
    def softmax(body):
        def build():
            return _notebook(0, {_answer_index(0, "softmax"): f'def softmax(x, mask=None):\n    """Softmax."""\n'
                                 f'    if mask is not None:\n        x = x.masked_fill(~mask, float("-inf"))\n{body}'})
        return build
    return {
        "00-softmax-row-minimum": (softmax("    e = (x - x.min(dim=-1, keepdim=True).values).exp()\n"
                                           "    return e / e.sum(dim=-1, keepdim=True)\n"), {"00.softmax": 0}),
        "00-softmax-global-maximum": (softmax("    e = (x - x.max()).exp()\n"
                                              "    return e / e.sum(dim=-1, keepdim=True)\n"), {"00.softmax": 0}),
        "07-running-var-biased": (lambda: _notebook(7, _swap(
            7, _answer_index(7, "MaskedBatchNorm"), "self.momentum * var * n / max(n - 1, 1)",
            "self.momentum * var")),
            {"07.rms-norm": 2, "07.rms-dtype": 1, "07.masked-bn-train": 2, "07.masked-bn-running": 0}),
        "22-memory-not-detached": (lambda: _notebook(22, _swap(
            22, _answer_index(22, "update_memories"), "states.detach()[", "states[")),
            {"22.relative-scores": 3, "22.memory-update": 0}),
    }


# ------------------------------------------------------------------ robustness

NESTED = "_DEEP = " + "-" * 5000 + "1\n"      # deeper than Python's parser goes


def _light() -> int:
    """A quick exercise to grade (the warm-up, while it exists)."""
    return next(n for n in [0, 12, 22, 6, 5] + list(range(26)) if _exercise(n) and _items(n))


def _robust():
    """name -> (builder, grade options)."""
    def string_lesson():
        number = _light()
        nb = _notebook(number)
        nb.metadata["course"]["lesson"] = f"{number:02d}"
        return nb

    def nested():
        number = _light()
        return _notebook(number, {0: NESTED + _answers(number)[0]})

    def slow():   # ten slow cells and a looping answer: the notebook's budget ends it
        number = _light()
        names = sorted(_defines(_answers(number)[0]) & _graded_names(number))
        loops = "".join(f"def {name}(*args, **kwargs):\n    while True:\n        pass\n\n\n" for name in names)
        return _notebook(number, {0: loops}, added=["import time\ntime.sleep(1.5)\n"] * 10)

    return {"lesson-as-a-string": (string_lesson, {}), "deeply-nested-expression": (nested, {}),
            "slow-cells-and-a-loop": (slow, {"notebook_timeout": 15.0, "cell_timeout": 3.0,
                                             "item_timeout": 3.0})}


# ------------------------------------------------------------------ grading them all once

def _grade(job):
    path, options = job
    started = time.monotonic()
    try:
        report = grade(path, **{"cell_timeout": CELL_S, "item_timeout": ITEM_S, **options})
    except GradeError as error:
        report = error.as_json()
    except Exception as error:  # noqa: BLE001 - reported as such, so that the test says which
        report = {"error": {"code": "internal", "message": f"{type(error).__name__}: {error}"}}
    report["seconds"] = round(time.monotonic() - started, 1)
    return report


def _build_all():
    """name -> (notebook, grade options, what to expect) or name -> Skip."""
    cases = {}
    for name, build in _honest().items():
        cases[f"honest:{name}"] = (build, {}, None)
    for name, build in _escapes().items():
        cases[f"escape:{name}"] = (build, {}, None)
    for name, (build, points) in _weak().items():
        cases[f"weak:{name}"] = (build, {}, points)
    for name, (build, options) in _robust().items():
        cases[f"robust:{name}"] = (build, options, None)
    built = {}
    for name, (build, options, expect) in cases.items():
        try:
            value = build()
        except Skip as why:
            built[name] = why
            continue
        nb, target = value if isinstance(value, tuple) else (value, None)
        built[name] = (nb, options, expect if expect is not None else target)
    return built


def _grade_all(folder: Path, built: dict) -> dict:
    jobs = {}
    for name, case in built.items():
        if isinstance(case, Skip):
            continue
        nb, options, _ = case
        (folder / name.replace(":", "-")).mkdir()
        path = folder / name.replace(":", "-") / "submission.ipynb"
        nbformat.write(nb, path)
        jobs[name] = (str(path), options)
    # the slow ones first, so that two workers end together
    order = sorted(jobs, key=lambda n: ("slow" not in n and "solution" not in n and ":19" not in n
                                        and ":18" not in n, n))
    with ProcessPoolExecutor(2) as pool:
        reports = dict(zip(order, pool.map(_grade, [jobs[n] for n in order])))
    return reports


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    built = _build_all()
    started = time.monotonic()
    reports = _grade_all(tmp_path_factory.mktemp("fairness"), built)
    return {"built": built, "reports": reports, "seconds": time.monotonic() - started}


def _report(graded, name):
    case = graded["built"][name]
    if isinstance(case, Skip):   # never skipped: a case whose exercise changed is rewritten or deleted
        pytest.fail(f"{name}: {case} - rewrite this case for the exercise as it is now, or delete it")
    report = graded["reports"][name]
    assert "items" in report, report
    return case, report


def _points(report):
    return {i["id"]: i["points"] for i in report["items"]}


def _names(kind):
    builders = {"honest": _honest, "escape": _escapes, "weak": _weak}[kind]()
    return [f"{kind}:{n}" for n in builders]


@pytest.mark.parametrize("name", _names("honest"))
def test_honest_code_gets_full_marks(graded, name):
    _, report = _report(graded, name)
    assert report["score"] == report["max_score"] > 0, report


@pytest.mark.parametrize("name", _names("escape"))
def test_escape_scores_zero_and_is_detected(graded, name):
    (_, _, target), report = _report(graded, name)
    mine = [i for i in report["items"] if target in REGISTRY[i["id"]].uses]
    assert mine, report
    if "in-place" not in name:
        assert all(i["points"] == 0 for i in mine), report
    if "in-place" in name:
        assert report["score"] < report["max_score"], report
        assert any("modified" in i["feedback"] for i in report["items"]), report
        return
    elif "read-the-solution" in name:
        assert all("No such file" in i["feedback"] or "not defined" in i["feedback"] for i in mine), report
    else:
        assert all(any(word in i["feedback"] for word in DETECTED) for i in mine), report
    others = [i for i in report["items"] if i not in mine]
    if "in-place" not in name:     # the rest of the notebook is the solution: untouched
        assert all(i["passed"] for i in others), report


@pytest.mark.parametrize("name", _names("weak"))
def test_weak_answer_loses_the_items_it_gets_wrong(graded, name):
    (_, _, expected), report = _report(graded, name)
    points = _points(report)
    assert set(expected) <= set(points), (f"{name}: the exercise's items changed ({sorted(points)}): "
                                          "rewrite this case for them, or delete it")
    assert {k: points.get(k) for k in expected} == expected, report


def test_lesson_given_as_a_string_is_graded(graded):
    _, report = _report(graded, "robust:lesson-as-a-string")
    assert report["score"] == report["max_score"] > 0, report


def test_deeply_nested_expression_is_the_learners_failure(graded):
    _, report = _report(graded, "robust:deeply-nested-expression")
    names = _defines(_answers(_light())[0])
    shifted = [i for i in report["items"] if names & set(REGISTRY[i["id"]].uses)]
    assert shifted and all(i["points"] == 0 and "RecursionError" in i["feedback"] for i in shifted), report
    assert all(i["passed"] for i in report["items"] if i not in shifted), report


def test_notebook_budget_bounds_slow_cells_and_loops(graded):
    (_, options, _), report = _report(graded, "robust:slow-cells-and-a-loop")
    assert report["seconds"] < options["notebook_timeout"] + 10, report
    assert report["score"] == 0 and any("grading time" in i["feedback"] for i in report["items"]), report


# ------------------------------------------------------------------ static checks, every lesson, no sandbox

GRADED_LESSONS = sorted({int(i.split(".")[0]) for i in REGISTRY if _exercise(int(i.split(".")[0]))})


def _sources(nb, number):
    from course_tools.grader import rebuild
    official = json.loads(_exercise(number).read_text(encoding="utf-8"))
    plan = rebuild(official, json.loads(nbformat.writes(nb)))
    return ([s["source"] for s in plan if s["kind"] in ("answer", "added")],
            [s["source"] for s in plan if s["kind"] == "setup"], [s["id"] for s in plan if s["kind"] == "grade"])


@pytest.mark.parametrize("number", GRADED_LESSONS)
def test_honest_constructs_pass_the_static_check_of_every_exercise(number):
    """Docstrings naming every forbidden object, computed getattr/setattr on one's own object,
    re.compile, .eval(), locals(), vars(self): what `course grade` and `course check` both apply."""
    learner, official, ids = _sources(_notebook(number, _with_constructs(number)), number)
    for item in ids:
        ex = REGISTRY[item]
        assert shortcut_feedback(item, learner, official, ex.uses, ex.forbids) is None, item


@pytest.mark.parametrize("number", GRADED_LESSONS)
def test_every_solution_passes_the_static_check(number):
    learner, official, ids = _sources(_notebook(number), number)
    for item in ids:
        ex = REGISTRY[item]
        assert shortcut_feedback(item, learner, official, ex.uses, ex.forbids) is None, item


def test_static_check_still_refuses_the_dynamic_lookups():
    forbidden = ["course_lib.attention:scaled_dot_product_attention",
                 "torch.nn.functional:scaled_dot_product_attention"]
    refused = {
        "nested import": (
            "def f(q):\n"
            "    from course_lib import attention\n"
            "    return attention.scaled_dot_product_attention(q, q, q)\n"),
        "nested module import": (
            "def f(q):\n"
            "    import course_lib.attention\n"
            "    return course_lib.attention.scaled_dot_product_attention(q, q, q)\n"),
        "module alias by assignment": (
            "import torch\n"
            "G = torch.nn.functional\n"
            "def f(q):\n"
            "    return G.scaled_dot_product_attention(q, q, q)\n"),
        "computed getattr on a module": (
            "import torch.nn.functional as F\n"
            "def f(q):\n"
            "    return getattr(F, 'scaled_' + 'dot_product_attention')(q, q, q)\n"),
        "getattr with the forbidden name": (
            "def f(q, m):\n"
            "    return getattr(m, 'scaled_dot_product_attention')(q, q, q)\n"),
        "eval": "def f(q):\n    return eval('q')\n",
        "exec defines it": "exec(open('x').read())\n",
        "globals": "def f(q):\n    return globals()['ref'](q)\n",
        "importlib": "import importlib\ndef f(q):\n    return importlib.import_module('course_lib.attention')\n",
        "sys.modules": "import sys\ndef f(q):\n    return sys.modules['course_lib.attention']\n",
        "torch._C": "import torch\ndef f(q):\n    with torch._C.DisableTorchFunction():\n        return q\n",
        "setprofile": "import sys\ndef f(q):\n    sys.setprofile(None)\n    return q\n",
        "__code__": "def g(q):\n    return q\ndef f(q):\n    return g.__code__\n",
        "code patched at module level": (
            "def f(q):\n"
            "    return q\n"
            "from course_lib.attention import scaled_dot_product_attention as r\n"
            "f.__code__ = r.__code__\n"),
        "rebound by a later import": (
            "def f(q):\n"
            "    return q\n"
            "from course_lib.attention import scaled_dot_product_attention as f\n"),
        "magic": "def f(q):\n    get_ipython().run_line_magic('run', 'x.py')\n    return q\n",
    }
    for what, source in refused.items():
        assert static_findings([source], ["import torch"], ["f"], forbidden), what
    ordinary = {
        "docstring": 'def f(q):\n    """Like torch.nn.functional.scaled_dot_product_attention."""\n    return q\n',
        "getattr on self": (
            "class f:\n"
            "    def __init__(self):\n"
            "        setattr(self, 'a' + '1', 1)\n"
            "        getattr(self, 'a' + '1')\n"),
        "re.compile": "import re\nP = re.compile('x')\ndef f(q):\n    return P.match(q)\n",
        "model.eval()": "def f(m):\n    return m.eval()\n",
        "locals": "def f(q):\n    return '{q}'.format(**locals())\n",
        "a local named like an alias": (
            "import torch.nn.functional as F\n"
            "def f(q):\n"
            "    F = q\n"
            "    return F.scaled_dot_product_attention\n"),
        "comparing with the course in another cell": (
            "def f(q):\n"
            "    return q\n"
            "from course_lib.attention import scaled_dot_product_attention as ref\n"
            "assert ref is not f\n"),
    }
    for what, source in ordinary.items():
        assert not static_findings([source], ["import torch"], ["f"], forbidden), what


def test_static_check_is_linear_in_the_code():
    """2,000 and 16,000 statements (the old walk: 2.7 s for 5,000, 40.9 s for 20,000, per item):
    time grows about linearly."""
    def timed(n):
        source = "".join(f"def h{i}(x):\n    return h{i - 1}(x) + {i}\n" if i else "def h0(x):\n    return x\n"
                         for i in range(n)) + f"def f(q):\n    return h{n - 1}(q)\n"
        shortcuts._CACHE.clear()          # (parsed code is shared by a notebook's items: not here)
        started = time.process_time()     # CPU time: the other processes of a busy machine do not count
        assert not static_findings([source], [], ["f"], ["torch.nn.functional:softmax"])
        return time.process_time() - started
    small, large = min(timed(2_000) for _ in range(2)), timed(16_000)
    assert large < 32 * small, (small, large)      # 8x the code: linear is ~8x, quadratic 64x


def test_lesson_mismatch_is_an_error():
    number, other = [n for n in range(26) if _exercise(n) and _items(n)][:2]
    nb = _notebook(other)
    nb.metadata["course"]["lesson"] = number
    with pytest.raises(GradeError) as error:
        _grade_in_process(nb)
    assert error.value.code == "lesson-mismatch" and f"lesson {other:02d}" in str(error.value)


def _grade_in_process(nb):
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "submission.ipynb"
        nbformat.write(nb, path)
        return grade(path, cell_timeout=CELL_S, item_timeout=ITEM_S)


def test_a_non_utf8_file_name_grades_and_is_recorded(tmp_path):
    folder = os.fsencode(tmp_path)
    path = os.path.join(folder, b"caf\xe9 \xff.ipynb")
    with open(path, "w", encoding="utf-8") as handle:
        nbformat.write(_notebook(_light()), handle)
    env = {**os.environ, "COURSE_GRADES_FILE": str(tmp_path / "grades.jsonl")}
    proc = subprocess.run([sys.executable, "-m", "course_tools.cli", "grade", path, "--item-timeout", "4"],
                          capture_output=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")
    assert b"caf" in proc.stdout, proc.stdout
    entry = json.loads((tmp_path / "grades.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert entry["score"] == entry["max_score"] > 0, entry


if __name__ == "__main__":
    import tempfile
    only = sys.argv[1:]
    built = {k: v for k, v in _build_all().items() if not only or any(o in k for o in only)}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        reports = _grade_all(Path(tmp), built)
        for name, case in built.items():
            if isinstance(case, Skip):
                print(f"{name:60s} SKIP {case}")
                continue
            report = reports[name]
            if "items" not in report:
                print(f"{name:60s} ERROR {report}")
                continue
            print(f"{name:60s} {report['score']}/{report['max_score']} {list(_points(report).values())} "
                  f"{report['seconds']}s")
            for item in report["items"]:
                if not item["passed"]:
                    print(f"      {item['id']}: {item['feedback'][:220]}")
        print(f"total {time.monotonic() - started:.0f} s")
