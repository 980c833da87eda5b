"""Dependencies: every third-party import is declared in pyproject.toml, every declared package is
locked at an exact version in requirements.lock, and environment.yml is generated from the two."""
import ast
import importlib.metadata
import re
import sys
from functools import cache

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from course_lib import ROOT
from course_tools import deps

FIRST_PARTY = {"course_lib", "course_tools", "conftest", "tests", "browser_tests"}


def _declared(*groups: str) -> set[str]:
    found = deps.declared()
    return {canonicalize_name(Requirement(r).name) for group in groups for r in found[group]}


# Which pyproject groups may provide the imports of each part of the repository.
RUNTIME = ("runtime",)
SOURCES = [  # (files, groups)
    ("course_lib/**/*.py", RUNTIME),
    ("course_tools/**/*.py", RUNTIME),
    ("notebooks/*.ipynb", RUNTIME),
    ("exercises/*.ipynb", RUNTIME),
    ("solutions/*.ipynb", RUNTIME),
    ("conftest.py", ("runtime", "test")),
    ("tests/**/*.py", ("runtime", "test")),
    ("browser_tests/**/*.py", ("runtime", "test", "site")),
]
SITE_CODE = {"course_tools/site.py", "course_tools/site_fonts.py"}  # build the website: may use the site extra


def _imports(source: str):
    """(top-level module, line) of every absolute import in `source`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0], node.lineno


def _sources(path):
    """(where, code) for a .py file, or for each code cell of a notebook (magics and shell lines dropped)."""
    relative = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    if path.suffix == ".py":
        yield relative, path.read_text(encoding="utf-8")
        return
    nb = nbformat.read(path, as_version=4)
    for number, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            code = "\n".join(line for line in cell.source.splitlines()
                             if not line.lstrip().startswith(("%", "!")))
            yield f"{relative} (cell {number})", code


def _first_party(module: str, path) -> bool:
    return (module in FIRST_PARTY or (ROOT / module).is_dir() or (ROOT / f"{module}.py").exists()
            or (path.parent / f"{module}.py").exists())


@cache
def _distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _undeclared():
    problems = []
    for pattern, groups in SOURCES:
        for path in sorted(ROOT.glob(pattern)):
            relative = path.relative_to(ROOT).as_posix()
            allowed = _declared(*groups, *(("site",) if relative in SITE_CODE else ()))
            for where, code in _sources(path):
                try:
                    found = list(_imports(code))
                except SyntaxError as error:
                    problems.append(f"{where}: cannot parse ({error.msg}, line {error.lineno})")
                    continue
                for module, line in found:
                    if module in sys.stdlib_module_names or _first_party(module, path):
                        continue
                    # Not installed here (the site extra, say): then its name is the distribution's.
                    names = {canonicalize_name(d) for d in _distributions().get(module, [module])}
                    if not names & allowed:
                        problems.append(f"`import {module}` ({where}, line {line}): distribution "
                                        f"{' / '.join(sorted(names))} is not declared in pyproject.toml "
                                        f"({' or '.join(groups)})")
    return problems


def test_every_third_party_import_is_declared_in_pyproject():
    problems = _undeclared()
    assert not problems, "undeclared imports:\n" + "\n".join(problems)


def test_the_scan_reads_notebook_cells_and_skips_magics(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("import not_code"),
        nbformat.v4.new_code_cell("%matplotlib inline\n!pip list\nimport numpy as np\n"
                                  "from scipy.stats import spearmanr\nfrom . import local"),
    ])
    path = tmp_path / "scan.ipynb"
    nbformat.write(nb, path)
    cells = list(_sources(path))
    assert [where for where, _ in cells] == ["scan.ipynb (cell 1)"]
    assert [module for module, _ in _imports(cells[0][1])] == ["numpy", "scipy"]


def test_lock_lines_are_exact_pins():
    lines = deps.LOCK.read_text(encoding="utf-8").splitlines()
    bad = [line for line in lines if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*==[0-9][0-9A-Za-z.!+-]*", line)]
    assert not bad, f"{deps.LOCK.name}: not `name==version` (normalised name): {bad}"
    names = [line.split("==")[0] for line in lines]
    assert len(names) == len(set(names)), "a package is locked twice"
    assert names == sorted(names), f"{deps.LOCK.name} is not sorted: run `make lock`"
    assert "course-lib" not in names, "the course itself is not locked"


def test_every_declared_dependency_is_locked_at_a_version_it_allows():
    pins = deps.read_lock()
    problems = []
    for group, requirements in deps.declared().items():
        for text in requirements:
            requirement = Requirement(text)
            name = canonicalize_name(requirement.name)
            if name not in pins:
                problems.append(f"{text} ({group}) is missing from {deps.LOCK.name}")
            elif not requirement.specifier.contains(pins[name], prereleases=True):
                problems.append(f"{text} ({group}): {deps.LOCK.name} has {name}=={pins[name]}")
    assert not problems, "run `make lock`:\n" + "\n".join(problems)
    assert pins["torch"] == "2.13.0"


def test_the_lock_holds_every_package_the_declared_ones_pull_in():
    """Walk the requirements of the installed distributions from pyproject's runtime and test
    dependencies: every package reached must be locked (else pip would pick its version freely)."""
    pins = deps.read_lock()
    pending = [Requirement(r) for r in deps.declared()["runtime"] + deps.declared()["test"]]
    seen, missing = set(), []
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        if (name, frozenset(requirement.extras)) in seen:
            continue
        seen.add((name, frozenset(requirement.extras)))
        if name not in pins and name not in missing:
            missing.append(name)
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for text in distribution.requires or []:
            child = Requirement(text)
            if child.marker is None or child.marker.evaluate({"extra": ""}) or any(
                    child.marker.evaluate({"extra": extra}) for extra in requirement.extras):
                pending.append(child)
    assert not missing, f"not in {deps.LOCK.name} (run `make lock`): {sorted(missing)}"


def test_environment_yml_is_generated_from_pyproject_and_the_lock():
    assert deps.ENVIRONMENT.read_text(encoding="utf-8") == deps.environment_yml(), \
        "environment.yml is stale: run `python -m course_tools.deps environment` (or `make lock`)"
    import yaml
    env = yaml.safe_load(deps.ENVIRONMENT.read_text(encoding="utf-8"))
    pip = next(entry["pip"] for entry in env["dependencies"] if isinstance(entry, dict))
    assert pip[0] == f"-c {deps.LOCK.name}"
    listed = {canonicalize_name(line.split("==")[0]) for line in pip[1:]}
    assert listed == _declared("runtime", "test")


def test_make_install_is_constrained_by_the_lock():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "LOCK   := requirements.lock" in makefile
    stamp = makefile.split("$(STAMP): pyproject.toml $(LOCK)\n", 1)[1].split("\n\n", 1)[0]
    site = makefile.split("$(SITE_STAMP): $(STAMP) pyproject.toml $(LOCK)\n", 1)[1].split("\n\n", 1)[0]
    installs = [line for line in (stamp + "\n" + site).splitlines() if "pip install" in line]
    assert len(installs) == 4 and all("-c $(LOCK)" in line for line in installs), installs


@pytest.mark.parametrize("freeze, expected", [
    ("torch==2.13.0+cpu\nPyYAML==6.0.4\n-e /work/main\n# comment\ncourse-lib==0.1.0\nsetuptools==84.2.1\n"
     "jupyter_client==8.10.0\npip==26.3\n",
     ["jupyter-client==8.10.0", "pip==26.3", "pyyaml==6.0.4", "setuptools==84.2.1", "torch==2.13.0"]),
])
def test_lock_lines_from_pip_freeze(freeze, expected):
    assert deps.lock_lines(freeze) == expected


def test_a_package_installed_from_a_url_cannot_be_locked():
    with pytest.raises(ValueError, match="cannot lock"):
        deps.lock_lines("thing @ file:///tmp/thing-1.0-py3-none-any.whl\n")
