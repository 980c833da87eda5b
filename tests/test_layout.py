"""The library's layout: the reading-order table (lesson -> modules) in `course_lib/__init__.py` and
CONTRIBUTING.md agrees with the files of course_lib and the notebooks' imports; importing the
library changes no process-wide state."""
from __future__ import annotations

import ast
import json
import os
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
