"""The library's layout: the reading-order table (lesson -> modules) in `course_lib/__init__.py` and
CONTRIBUTING.md agrees with the files of course_lib and the notebooks' imports; importing the
library changes no process-wide state."""
from __future__ import annotations

import ast
import graphlib
import json
import os
import re
import subprocess
import sys

import course_lib
from course_lib import ROOT
from course_tools.manifest import LESSONS

EVERY_LESSON = "every lesson"


def _table(text: str) -> dict[str, set[str]]:
    """{row name: modules named in its builds and imports cells} of the reading-order table."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 3 or cells[0] in ("lesson", "---"):
            continue
        rows[cells[0]] = {m.strip() for cell in cells[1:] for m in cell.split(",") if m.strip()}
    return rows


def _table_text(text: str) -> str:
    """The table's lines: from its header row to the last row that follows it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| lesson | builds | imports |"))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[start:end])


def _library_modules() -> set[str]:
    package = ROOT / "course_lib"
    return {".".join(p.relative_to(package).with_suffix("").parts) for p in package.rglob("*.py")
            if p.name != "__init__.py"}


def _notebook_imports(path) -> set[str]:
    """The course_lib modules a notebook's code cells import (`from course_lib.x import`,
    `import course_lib.x`, `from course_lib import x` where x is a module)."""
    modules, found = _library_modules(), set()
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        source = "\n".join(l for l in source.splitlines() if not l.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.module == "course_lib":
                found |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("course_lib."):
                found.add(node.module.removeprefix("course_lib."))
            elif isinstance(node, ast.Import):
                found |= {a.name.removeprefix("course_lib.") for a in node.names
                          if a.name.startswith("course_lib.")}
    return found


def test_the_table_names_every_module_of_the_library_and_only_those():
    named = set().union(*_table(course_lib.__doc__).values())
    assert named == _library_modules()


def test_the_table_has_a_row_per_lesson_listing_what_its_notebook_imports():
    table = _table(course_lib.__doc__)
    assert {l.stem for l in LESSONS} <= set(table)
    for lesson in LESSONS:
        missing = _notebook_imports(lesson.notebook) - table[lesson.stem] - table[EVERY_LESSON]
        assert not missing, f"{lesson.stem} imports {sorted(missing)}: add them to its row"


def test_contributing_holds_the_same_table():
    assert _table_text(course_lib.__doc__)
    assert _table_text(course_lib.__doc__) in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")


def _python(code: str, env: dict | None = None) -> str:
    """Run `code` in a fresh interpreter of this environment (the working tree's course_lib); its stdout."""
    env = {**(env if env is not None else os.environ), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


LIBRARY = "course_lib, course_lib.pretrained, course_lib.data.corpus, course_lib.pretraining"


def test_importing_the_library_changes_no_process_wide_state():
    """A fresh interpreter: importing course_lib (the package, `pretrained`, the data package,
    `pretraining`) leaves the warning filters and the environment as they were. The third-party
    packages it imports (torch, numpy ...) are imported first: their own filters are theirs."""
    third_party = _python(f"import sys\nbefore = set(sys.modules)\nimport {LIBRARY}\n"
                          "print(' '.join(sorted({m.split('.')[0] for m in set(sys.modules) - before}"
                          " - {'course_lib'})))").split()
    code = (f"import importlib, os, warnings\n"
            f"for name in {third_party!r}:\n"
            f"    try:\n        importlib.import_module(name)\n    except Exception:\n        pass\n"
            f"filters, env = list(warnings.filters), dict(os.environ)\n"
            f"import {LIBRARY}\n"
            f"assert warnings.filters == filters, [f for f in warnings.filters if f not in filters]\n"
            f"assert dict(os.environ) == env, sorted(set(os.environ.items()) ^ set(env.items()))\n")
    _python(code, env={k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"})


def test_no_iprogress_warning_in_a_kernel_without_ipywidgets():
    """In a Jupyter kernel without ipywidgets, the first import of `tqdm.auto` (by transformers)
    warns "IProgress not found"; course_lib does that import first, under a filter of its own, so a
    lesson that imports course_lib and then transformers shows no such warning."""
    code = ("import warnings\n"
            "import ipykernel.zmqshell  # noqa: F401  what tqdm.auto looks for to detect a kernel\n"
            "warnings.simplefilter('always')\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    import course_lib.pretrained\n"
            "    import tqdm.auto  # what transformers imports\n"
            "print([str(w.message) for w in caught if 'IProgress' in str(w.message)])\n")
    assert _python(code).strip() == "[]"


# ------------------------------------------------------------ argument checks vs the idea
# CONTRIBUTING.md, "Style": arguments are checked where a user enters (the top-level models'
# forwards, the configs, the public functions a lesson calls), not inside every layer, and the
# checks never outnumber the idea. A line of a function body is a check line when it belongs to
# an `if ...: raise` block, a statement calling a `require_*` / `refuse_*` helper of
# course_lib.validation, or an assert. validation.py, the helpers themselves, is left out.
CHECK_HELPERS = ("require_", "refuse_")
MAX_CHECK_SHARE = 0.15             # of all the function-body lines of course_lib
MAX_MODULE_CHECK_SHARE = 0.30      # of one module's


def _calls_a_check(node) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name.startswith(CHECK_HELPERS):
                return True
    return False


def _only_raises(body) -> bool:
    return all(isinstance(s, ast.Raise) or _is_if_raise(s) for s in body)


def _is_if_raise(node) -> bool:
    return isinstance(node, ast.If) and _only_raises(node.body) and (not node.orelse or _only_raises(node.orelse))


def _is_check(node) -> bool:
    simple = (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)
    return (isinstance(node, ast.Assert) or _is_if_raise(node)
            or (isinstance(node, simple) and _calls_a_check(node)))


def check_lines(path) -> tuple[int, int]:
    """(check lines, body lines) of a module: the non-blank, non-comment lines of its function
    bodies (docstrings left out), and how many of them are argument checks."""
    text = path.read_text(encoding="utf-8")
    code = {i for i, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.strip().startswith("#")}
    spans = lambda node: set(range(node.lineno, node.end_lineno + 1))   # noqa: E731
    body, checks = set(), set()
    for fn in ast.walk(ast.parse(text)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        statements = fn.body
        if statements and isinstance(statements[0], ast.Expr) and isinstance(statements[0].value, ast.Constant):
            statements = statements[1:]                                  # the docstring
        for statement in statements:
            body |= spans(statement)
        checks |= set().union(*(spans(n) for n in ast.walk(fn) if _is_check(n)))
    return len(checks & body & code), len(body & code)


def check_table() -> dict[str, tuple[int, int]]:
    """{module: (check lines, body lines)} of course_lib, validation.py left out."""
    package = ROOT / "course_lib"
    return {str(p.relative_to(package)): check_lines(p) for p in sorted(package.rglob("*.py"))
            if p.name != "validation.py"}


def test_argument_checks_do_not_drown_the_idea():
    table = check_table()
    checks, body = (sum(column) for column in zip(*table.values()))
    assert checks <= MAX_CHECK_SHARE * body, f"{checks} of {body} body lines are argument checks"
    heavy = {m: f"{c}/{b}" for m, (c, b) in table.items() if c > MAX_MODULE_CHECK_SHARE * b}
    assert not heavy, f"modules whose checks outweigh the idea (check/body lines): {heavy}"


if __name__ == "__main__":      # python -m tests.test_layout: the table
    rows = check_table()
    for module, (c, b) in sorted(rows.items(), key=lambda row: -row[1][0] / max(row[1][1], 1)):
        print(f"{module:32} {c:5} {b:5} {c / max(b, 1):6.0%}")
    total_c, total_b = (sum(column) for column in zip(*rows.values()))
    print(f"{'total':32} {total_c:5} {total_b:5} {total_c / total_b:6.0%}")


# --------------------------------------------------------------------------- the import graph

PACKAGES = ("course_lib", "course_tools")


def _modules() -> dict[str, tuple]:
    """{dotted name: (path, is a package)} of every module of course_lib and course_tools."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def import_graph() -> dict[str, dict[str, int]]:
    """{module: {module it imports: line}} between the modules of course_lib and course_tools, read
    from the source with `ast`: `import x` and `from x import y` at module level and inside
    functions, relative imports resolved (`from . import y` and `from .x import y` name the package
    and, when y is a module, y too)."""
    modules, graph = _modules(), {}
    for name, (path, is_package) in modules.items():
        edges = graph[name] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".") if is_package else name.split(".")[:-1]
                    parts = parts[:len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for target in targets:
                parts = target.split(".")
                # the longest prefix that is one of our modules (`import course_lib.data.corpus`)
                known = next((".".join(parts[:i]) for i in range(len(parts), 0, -1)
                              if ".".join(parts[:i]) in modules), None)
                if known is not None and known != name:
                    edges.setdefault(known, node.lineno)
    return graph


def test_the_import_graph_reads_relative_and_function_level_imports():
    graph = import_graph()
    assert "course_lib.data.corpus" in graph["course_lib.pretraining"]          # from .data.corpus import
    assert "course_lib.cache" in graph["course_lib.pretraining"]                # from . import cache
    assert "course_tools.grader.authoring" in graph["course_tools.checks.lesson01"]   # from ..grader.authoring import
    assert "course_tools.grader.authoring" in graph["course_tools.grader.run"]        # inside a function
    assert "course_lib" in graph["course_tools"]                                # from course_lib import ROOT


def test_imports_between_the_course_modules_have_no_cycle():
    """Imports flow one way: a cycle (a imports b, b imports a, directly or round a longer loop,
    at module level or inside a function) makes the modules hard to read and one of them
    import half-initialised. Break one by moving the shared piece to the module that owns it, or
    to a small module both import."""
    graph = import_graph()
    try:
        tuple(graphlib.TopologicalSorter({m: set(deps) for m, deps in graph.items()}).static_order())
    except graphlib.CycleError as error:
        cycle = error.args[1]
        steps = [f"{a} -> {b} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])]
        raise AssertionError("import cycle: " + "; ".join(steps)) from None


def test_the_library_never_imports_the_machinery():
    """course_lib (what the lessons build) must not depend on course_tools (the CLI, the grader)."""
    graph = import_graph()
    wrong = sorted(f"{m} -> {d} (line {line})" for m, deps in graph.items() if m.split(".")[0] == "course_lib"
                   for d, line in deps.items() if d.split(".")[0] == "course_tools")
    assert not wrong, wrong


# --------------------------------------------------------------------------- module size

MAX_MODULE_LINES = 400
WHY_MARKER = "Why one module:"
MIN_REASON_CHARS = 40


def long_module_reason(path) -> str | None:
    """The reason a module states in its docstring for holding more than MAX_MODULE_LINES lines: the
    text of the docstring's paragraph that starts with WHY_MARKER, or None when there is none."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    for paragraph in doc.split("\n\n"):
        if paragraph.lstrip().startswith(WHY_MARKER):
            return " ".join(paragraph.strip()[len(WHY_MARKER):].split())
    return None


def test_a_module_over_400_lines_states_why_at_its_top():
    """One job per module, and none over ~400 lines without a reason: a long module's docstring has a
    paragraph starting `Why one module:` that says why its parts belong together (at least 40
    characters). Otherwise split it by job. Nothing is excluded by name."""
    offenders = []
    for name, (path, _) in sorted(_modules().items()):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines <= MAX_MODULE_LINES:
            continue
        reason = long_module_reason(path)
        if reason is None:
            offenders.append(f"{path.relative_to(ROOT)} ({lines} lines): no '{WHY_MARKER}' paragraph in its "
                             "docstring")
        elif len(reason) < MIN_REASON_CHARS:
            offenders.append(f"{path.relative_to(ROOT)} ({lines} lines): the reason {reason!r} is under "
                             f"{MIN_REASON_CHARS} characters")
    assert not offenders, (f"modules over {MAX_MODULE_LINES} lines: split each by job, or state why it is one "
                           "module\n  " + "\n  ".join(offenders))


def test_the_long_module_reason_is_read_from_the_docstring(tmp_path):
    path = tmp_path / "long.py"
    path.write_text('"""A module.\n\nWhy one module: its two halves\n  change together.\n"""\nx = 1\n')
    assert long_module_reason(path) == "its two halves change together."
    path.write_text('"""A module."""\n# Why one module: a comment is not the docstring\n')
    assert long_module_reason(path) is None


# --------------------------------------------------------------------------- the house map

HOUSE_MAP_HEADER = "| module | owns |"


def house_map() -> dict[str, str]:
    """CONTRIBUTING.md's one-screen map of course_tools: {module under course_tools, dotted (rows name it
    as a path, `grader/run.py`; a package by its folder, `grader/`; `checks/lessonNN.py` for the
    per-lesson checks): what it owns}."""
    lines = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8").splitlines()
    start = lines.index(next(line for line in lines if line.startswith(HOUSE_MAP_HEADER)))
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        name, owns = (cell.strip() for cell in line.strip().strip("|").split("|", 1))
        name = name.strip("`").removeprefix("course_tools/").removesuffix(".py").rstrip("/").replace("/", ".")
        rows[name] = owns
    return rows


def test_the_house_map_names_every_module_of_the_machinery_and_only_those():
    """The map a newcomer reads first stays in step with course_tools: add, split or move a module and
    its row with it (one row per module, what it owns in a few words)."""
    actual = {re.sub(r"lesson\d\d$", "lessonNN", name.removeprefix("course_tools."))
              for name in _modules() if name.startswith("course_tools.")}
    mapped = house_map()
    assert not actual - set(mapped), f"modules missing from CONTRIBUTING.md's house map: {sorted(actual - set(mapped))}"
    assert not set(mapped) - actual, f"rows of the house map with no module: {sorted(set(mapped) - actual)}"
    thin = sorted(name for name, owns in mapped.items() if len(owns) < 12)
    assert not thin, f"say what these own: {thin}"
