"""No exercise is answered by copying: each `def`/`class` of a solution's answer cells shares less
than 70% of its code tokens (comments, docstrings and strings dropped, names kept; difflib's ratio)
with every `def`/`class` of its lesson notebook and of `course_lib` - neither in the lesson above
nor one file away."""
from __future__ import annotations

import ast
import difflib
import io
import tokenize
from functools import cache

import nbformat
import pytest

from course_tools import ROOT
from course_tools.manifest import LESSONS

THRESHOLD = 0.70
#: A definition (lesson or library) this short is one line of code after its `def` (`return self.up(self.down(x))`):
#: half its tokens are the boilerplate every method shares, so any one-line answer is "like" it.
MIN_LIBRARY_TOKENS = 24
SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
        tokenize.STRING, tokenize.ENCODING, tokenize.ENDMARKER}


def _strip_magics(source: str) -> str:
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _wiring(node) -> bool:
    """An `__init__` that only calls super().__init__() and stores attributes: every module's
    wiring looks alike, so it says nothing either way (its class and methods are still compared)."""
    if not (isinstance(node, ast.FunctionDef) and node.name == "__init__"):
        return False
    for stmt in node.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
                and isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr == "__init__":
            continue
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and all(
                isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):   # a docstring
            continue
        return False
    return True


def definitions(source: str) -> list[tuple[str, list[str]]]:
    """(name, code tokens) of every function and class defined in `source`, at any depth."""
    try:
        tree = ast.parse(_strip_magics(source))
    except SyntaxError:
        return []
    lines = _strip_magics(source).splitlines(keepends=True)
    out = []
    for node in ast.walk(tree):
        if _wiring(node):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            text = "".join(lines[node.lineno - 1:node.end_lineno])
            text = text[node.col_offset:] if node.col_offset else text
            try:
                tokens = [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline)
                          if t.type not in SKIP]
            except (tokenize.TokenError, IndentationError):
                continue
            out.append((node.name, tokens))
    return out


def similarity(a: list[str], b: list[str]) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _code(path) -> str:
    nb = nbformat.read(path, as_version=4)
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "code")


@cache
def library_definitions() -> list[tuple[str, list[str]]]:
    out = []
    for path in sorted((ROOT / "course_lib").rglob("*.py")):
        out += [(f"course_lib/{path.relative_to(ROOT / 'course_lib')}:{n}", t)
                for n, t in definitions(path.read_text(encoding="utf-8"))]
    return out


def answer_definitions(lesson) -> list[tuple[str, list[str]]]:
    exercise = nbformat.read(lesson.exercise, as_version=4)
    answer_ids = {c.id for c in exercise.cells if "answer" in c.metadata.get("tags", [])}
    solution = nbformat.read(lesson.solution, as_version=4)
    return [d for c in solution.cells if c.id in answer_ids for d in definitions(c.source)]


def closest(answer_tokens, candidates):
    """(ratio, name) of the most similar candidate definition."""
    return max(((similarity(answer_tokens, t), n) for n, t in candidates if len(t) >= MIN_LIBRARY_TOKENS),
               default=(0.0, ""))


WITH_EXERCISE = [l for l in LESSONS if l.has_exercise and l.number > 0]


@pytest.mark.parametrize("lesson", WITH_EXERCISE, ids=[l.stem for l in WITH_EXERCISE])
def test_no_answer_is_a_copy_of_the_lesson_or_the_library(lesson):
    lesson_defs = [(f"lesson:{n}", t) for n, t in definitions(_code(lesson.notebook))]
    copies = []
    for name, tokens in answer_definitions(lesson):
        if len(tokens) < 8:          # a one-line helper says nothing either way
            continue
        ratio, where = closest(tokens, lesson_defs + library_definitions())
        if ratio >= THRESHOLD:
            copies.append(f"{name}: {ratio:.2f} like {where}")
    assert not copies, f"{lesson.stem}: answers that copy the lesson or course_lib: " + "; ".join(copies)


def test_the_measure_catches_a_planted_copy():
    lesson = next(l for l in WITH_EXERCISE if l.number == 1)
    library = dict(library_definitions())
    planted = library["course_lib/attention.py:scaled_dot_product_attention"]
    renamed = [("x" if t == "scores" else t) for t in planted]   # a renamed local changes one token kind
    assert closest(renamed, library_definitions())[0] >= 0.9
    honest = definitions("def f(a, b):\n    out = []\n    for i in range(len(a)):\n"
                         "        out.append(a[i] * b[i] + 1)\n    return out\n")[0][1]
    assert closest(honest, library_definitions())[0] < THRESHOLD
    assert lesson.exercise.exists()
