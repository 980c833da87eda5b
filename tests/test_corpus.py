"""Checks proven to fail wrong answers and to pass honest ones (tests/corpus/, see its __init__).

Every mistake scores 0 on its item with feedback that names it, and every honest variant scores
full marks - in the notebook's way (`run_check` with the shortcut rules, what `check(...)` and
`course check` run; fast, in this process) - and, for one mistake and one honest variant per lesson,
through the sandboxed grader too, which must give the same verdict per item ("one verdict").
"""
from __future__ import annotations

import importlib
import json
import pkgutil
from concurrent.futures import ProcessPoolExecutor

import nbformat
import pytest

from course_tools import ROOT
from course_tools.grader.authoring import load_all
from course_tools.grader.notebook import GRADE_CALL
from course_tools.grading import run_check
from course_tools.manifest import LESSONS

from . import corpus

pytestmark = pytest.mark.grader
REGISTRY = load_all()
CORPORA = {int(m.name[len("lesson"):]): importlib.import_module(f"tests.corpus.{m.name}")
           for m in pkgutil.iter_modules(corpus.__path__) if m.name.startswith("lesson")}
LESSON = {l.number: l for l in LESSONS if l.has_exercise}


def _cells(number):
    """(set-up sources, answer sources of the solution, graded ids) of lesson `number`'s exercise."""
    lesson = LESSON[number]
    exercise = nbformat.read(lesson.exercise, as_version=4)
    solution = {c.id: c.source for c in nbformat.read(lesson.solution, as_version=4).cells}
    setup, answers, graded = [], [], []
    for cell in exercise.cells:
        if cell.cell_type != "code":
            continue
        if "answer" in cell.metadata.get("tags", []):
            answers.append(solution[cell.id])
        elif GRADE_CALL.search(cell.source):
            graded += GRADE_CALL.findall(cell.source)
        else:
            setup.append(cell.source)
    return setup, answers, graded


def _sources(number, replaced):
    setup, answers, _ = _cells(number)
    unknown = set(replaced) - set(range(len(answers)))
    assert not unknown, f"lesson {number:02d} has {len(answers)} answer cells; the corpus names {sorted(unknown)}"
    return setup, [replaced.get(i, source) for i, source in enumerate(answers)]


def in_notebook(number, replaced, seed=0, items=None):
    """{item id: Result} as the notebook's check(...) computes it, for every graded item of the
    exercise or only `items` (a mistake is judged on its own item: each check is independent)."""
    return in_notebook_at_seeds(number, replaced, [seed], items)[seed]


def in_notebook_at_seeds(number, replaced, seeds, items=None):
    """{seed: {item id: Result}}: the exercise's cells run once, then every check at each seed (the
    seed draws the hidden cases; the cells do not depend on it)."""
    setup, answers = _sources(number, replaced)
    namespace = {"__name__": "__main__"}
    for source in setup + answers:
        exec(compile(source, "<cell>", "exec"), namespace)   # noqa: S102 - the corpus is ours
    out = {}
    for seed in seeds:
        out[seed] = {}
        for item in _cells(number)[2]:
            if items is not None and item not in items:
                continue
            objects = [namespace.get(name) for name in REGISTRY[item].uses]
            out[seed][item] = run_check(item, *objects, seed=seed, learner_sources=answers,
                                        official_sources=setup)
    return out


def _notebook_file(number, replaced, folder, name):
    lesson = LESSON[number]
    nb = nbformat.read(lesson.exercise, as_version=4)
    _, answers = _sources(number, replaced)
    index = 0
    for cell in nb.cells:
        if "answer" in cell.metadata.get("tags", []):
            cell.source = answers[index]
            index += 1
    path = folder / f"{number:02d}-{name}.ipynb"
    nbformat.write(nb, path)
    return str(path)


def _grade(path):
    from course_tools.grader import grade
    return grade(path, cell_timeout=60, item_timeout=30)


MISTAKE_CASES = [(n, m) for n, c in sorted(CORPORA.items()) for m in c.MISTAKES]
HONEST_CASES = [(n, h) for n, c in sorted(CORPORA.items()) for h in c.HONEST]


@pytest.mark.parametrize("number,mistake", MISTAKE_CASES, ids=[f"{n:02d}-{m.item}-{m.name}" for n, m in MISTAKE_CASES])
def test_mistake_scores_zero_with_feedback_that_names_it(number, mistake):
    result = in_notebook(number, mistake.answers, items={mistake.item})[mistake.item]
    assert result.points == 0 and not result.passed, f"{mistake.name} passed {mistake.item}"
    assert mistake.words.lower() in result.feedback.lower(), (mistake.words, result.feedback)


@pytest.mark.parametrize("number,honest", HONEST_CASES, ids=[f"{n:02d}-{h.name}" for n, h in HONEST_CASES])
def test_honest_variant_gets_full_marks(number, honest):
    results = in_notebook(number, honest.answers)
    assert all(r.passed for r in results.values()), {i: r.feedback for i, r in results.items() if not r.passed}


def test_every_graded_item_has_three_mistakes_and_every_exercise_two_honest_variants():
    missing = []
    for number, lesson in LESSON.items():
        corpus_module = CORPORA.get(number)
        items = _cells(number)[2]
        for item in items:
            if REGISTRY[item].manual:     # a written answer: a person grades it
                continue
            n = sum(m.item == item for m in getattr(corpus_module, "MISTAKES", []))
            if n < 3:
                missing.append(f"{item}: {n} mistakes")
        if len(getattr(corpus_module, "HONEST", [])) < 2:
            missing.append(f"{number:02d}: {len(getattr(corpus_module, 'HONEST', []))} honest variants")
    assert not missing, "corpus incomplete: " + "; ".join(missing)


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory):
    """One mistake and one honest variant per lesson, graded by the sandboxed grader in parallel."""
    folder = tmp_path_factory.mktemp("corpus")
    jobs = []
    for number, module in sorted(CORPORA.items()):
        for kind, entries in (("mistake", module.MISTAKES[:1]), ("honest", module.HONEST[:1])):
            for entry in entries:
                jobs.append((number, kind, entry, _notebook_file(number, entry.answers, folder, f"{kind}-{entry.name}")))
    with ProcessPoolExecutor(2) as pool:
        reports = list(pool.map(_grade, [j[3] for j in jobs]))
    return list(zip(jobs, reports))


def test_the_grader_gives_the_notebooks_verdict(sandboxed):
    disagree = []
    for (number, kind, entry, path), report in sandboxed:
        graded = {i["id"]: i["passed"] for i in report.get("items", [])}
        notebook = {i: r.passed for i, r in in_notebook(number, entry.answers, seed=1).items()}
        if graded != notebook:
            disagree.append(f"{number:02d} {kind} {entry.name}: grader {graded}, notebook {notebook} "
                            + json.dumps([i["feedback"] for i in report.get("items", [])])[:300])
    assert not disagree, "\n".join(disagree)
