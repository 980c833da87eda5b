"""The locked environment: `requirements.lock` (exact versions) and `environment.yml` (generated).

`pyproject.toml` says what the course needs (ranges); `requirements.lock` says exactly which
versions were installed and tested - every package `make install` and `make site` install, the
dependencies of dependencies included, one `name==version` a line. The Makefile passes it to pip
as constraints (`pip install -c requirements.lock ...`), so CI and every learner get the same
versions. `environment.yml` (the conda route) is generated from the two.

    make lock                                   # after changing dependencies in pyproject.toml
    python -m course_tools.deps lock            # freeze *this* environment into the lock
    python -m course_tools.deps environment     # regenerate environment.yml only

`make lock` resolves everything afresh in a throwaway virtual environment (as `make install`,
then `make site`, would on a fresh machine) and runs `lock` there; tests/test_dependencies.py
fails when the lock, environment.yml and pyproject.toml disagree.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib

from . import ROOT

LOCK = ROOT / "requirements.lock"
ENVIRONMENT = ROOT / "environment.yml"
PYPROJECT = ROOT / "pyproject.toml"
#: Never locked: the course itself (installed editable). pip and setuptools are locked: `make
#: install` upgrades pip, and torch requires setuptools>=77 (newer than the venv's own).
UNLOCKED = {"course-lib"}
#: The extras environment.yml installs with the runtime dependencies (not the website's).
CONDA_EXTRAS = ("test",)

_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s=;@]+)$")


def canonical(name: str) -> str:
    """A distribution name as PEP 503 normalises it (`PyYAML`, `jupyter_client` -> `pyyaml`, `jupyter-client`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    """The distribution name a requirement string (`"transformers>=5.0,<6"`) names, normalised."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if not match:
        raise ValueError(f"not a requirement: {requirement!r}")
    return canonical(match.group(1))


def declared() -> dict[str, list[str]]:
    """pyproject.toml's requirements: {"runtime": [...], <extra>: [...]} as written there."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    return {"runtime": list(project["dependencies"]), **project.get("optional-dependencies", {})}


def lock_lines(freeze: str) -> list[str]:
    """`pip freeze --all` output -> the lock's lines: `name==version`, names normalised, sorted.

    Local version labels are dropped (`torch==2.13.0+cpu` -> `torch==2.13.0`): `==2.13.0` still
    accepts the CPU build installed here and the plain build from PyPI elsewhere.
    """
    pins = {}
    for raw in freeze.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("-e "):
            continue
        match = _LINE.match(line)
        if not match:
            raise ValueError(f"cannot lock {line!r}: expected name==version (a package installed "
                             "from a URL or a folder cannot be locked)")
        name, version = canonical(match.group(1)), match.group(2).split("+")[0]
        if name not in UNLOCKED:
            pins[name] = version
    return [f"{name}=={pins[name]}" for name in sorted(pins)]


def read_lock(path=LOCK) -> dict[str, str]:
    """{normalised name: version} from the lock file."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _LINE.match(line)
        if not match:
            raise ValueError(f"{path.name}: not name==version: {line!r}")
        pins[canonical(match.group(1))] = match.group(2)
    return pins


def write_lock(python: str = sys.executable) -> list[str]:
    """Freeze the environment of `python` into requirements.lock; return the lines written."""
    freeze = subprocess.run([python, "-m", "pip", "freeze", "--all"], check=True,
                            capture_output=True, text=True).stdout
    lines = lock_lines(freeze)
    LOCK.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines


def environment_yml() -> str:
    """environment.yml as generated from pyproject.toml and requirements.lock.

    conda provides Python 3.11; pip then installs pyproject's runtime and test dependencies at their
    locked versions, with the lock as constraints for everything they pull in - the versions
    `make install` installs (conda-forge builds of the same versions are not guaranteed to exist).
    """
    pins = read_lock()
    groups = declared()
    names = []
    for group in ("runtime", *CONDA_EXTRAS):
        for requirement in groups[group]:
            name = requirement_name(requirement)
            if name not in pins:
                raise ValueError(f"{name} ({group} in pyproject.toml) is missing from {LOCK.name}: run `make lock`")
            if name not in names:
                names.append(name)
    lines = [
        "# Generated from pyproject.toml and requirements.lock by `python -m course_tools.deps environment`",
        "# (`make lock` regenerates both; tests/test_dependencies.py fails when this file is stale): do not edit.",
        "# conda provides Python; pip installs the versions `make install` installs (requirements.lock).",
        "# conda env create -f environment.yml && conda activate transformers-qbq && pip install -e . --no-deps",
        "name: transformers-qbq",
        "channels:",
        "  - conda-forge",
        "dependencies:",
        "  - python=3.11",
        "  - pip",
        "  - pip:",
        f"      - -c {LOCK.name}",
        *(f"      - {name}=={pins[name]}" for name in names),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["lock"]:
        lines = write_lock()
        ENVIRONMENT.write_text(environment_yml(), encoding="utf-8")
        print(f"{LOCK.name}: {len(lines)} packages; {ENVIRONMENT.name} regenerated")
    elif args == ["environment"]:
        ENVIRONMENT.write_text(environment_yml(), encoding="utf-8")
        print(f"{ENVIRONMENT.name} regenerated")
    else:
        print("usage: python -m course_tools.deps lock|environment", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
