"""Cache keys for files the course builds once and reuses (ONNX exports, trained checkpoints).

A cached file is valid only while everything that produced it is unchanged: the inputs (weights,
config, options), the versions of the libraries that wrote it, and the course's own source that
ran, transitively. One helper builds such keys, so that every cache misses the same things:

    key = cache_key({"weights": state_digest(model), "config": config_dict(model)},
                    versions("torch", "onnx"), source_digest(source_modules(Path(__file__))))
    path = cache_dir("onnx") / f"encoder-{key}.onnx"
    with atomic_path(path) as tmp:          # a name unique to this process; renamed when done
        write(tmp)

The course's caches all use these helpers: `course_lib.onnx_export` (ONNX files) and
`course_lib.pretraining` (the tiny BERT's checkpoints). A cached file is read back as data only
(`torch.load(..., weights_only=True)`): loading it runs no code.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
import os
import uuid
from contextlib import contextmanager
from pathlib import Path

from . import ROOT
from .validation import require_int


def cache_dir(name: str, root: str | Path | None = None) -> Path:
    """build/cache/<name> (created); `root` replaces build/cache."""
    if not isinstance(name, str) or not name or Path(name).is_absolute() or ".." in Path(name).parts:
        raise ValueError(f"name: expected a non-empty relative folder name inside the cache root "
                         f"(no '..', not absolute), got {name!r}")
    base = Path(root) if root is not None else ROOT / "build" / "cache"
    folder = base / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def source_modules(*entry_points: str | Path) -> list[Path]:
    """The given course_lib files and, transitively, every course_lib module they import
    (relative imports `from .x import ...`, `from . import x`, `from ..x import ...` out of a
    subpackage such as `course_lib.data`, read from the source with `ast`, including imports
    inside functions), sorted. A subpackage counts with its `__init__.py`, which importing any of
    its modules runs."""
    for p in entry_points:
        if not Path(p).is_file():      # a mistyped entry point would digest no source: a stale key
            raise ValueError(f"entry_points: expected existing source files, got {str(p)!r}")
    todo, seen = [Path(p).resolve() for p in entry_points], set()
    while todo:
        path = todo.pop()
        if path in seen or not path.exists():
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.level >= 1):
                continue
            base = path.parent
            for _ in range(node.level - 1):                       # from ..x: one folder up
                base = base.parent
            todo.append(base / "__init__.py")
            for part in (node.module or "").split(".") if node.module else []:
                base = base / part                                # from .data.corpus import ...
                todo.append(base / "__init__.py")
            if node.module:
                todo.append(base.with_suffix(".py"))              # a module, or a package (above)
            # from . import x / from .data import corpus: x may be a module of that package
            todo += [base / f"{alias.name}.py" for alias in node.names]
            todo += [base / alias.name / "__init__.py" for alias in node.names]
    return sorted(seen)


def source_digest(paths) -> str:
    """sha256 over the (name, text) of the files, in sorted order."""
    digest = hashlib.sha256()
    for path in sorted(Path(p) for p in paths):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def versions(*packages: str) -> dict[str, str]:
    """{package: installed version} ('absent' when not installed)."""
    found = {}
    for name in packages:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "absent"
    return found


def cache_key(inputs: dict, package_versions: dict | None = None, source: str | None = None,
              length: int = 16) -> str:
    """A short sha256 of (inputs, package versions, source digest), JSON with sorted keys:
    any change to any of them gives another key."""
    require_int("length", length, minimum=1)     # length 0: every key "", every file one
    blob = json.dumps({"inputs": inputs, "versions": package_versions or {}, "source": source or ""},
                      sort_keys=True, default=_json_default)
    return hashlib.sha256(blob.encode()).hexdigest()[:length]


def _json_default(value):
    """str() of what JSON cannot write; not of a tensor, whose str() elides the middle of its values
    (two tensors that differ there would share a key)."""
    if hasattr(value, "shape") and getattr(value, "ndim", 0) >= 1:      # a tensor or an array
        raise ValueError(f"inputs: expected JSON-like values, got a {type(value).__name__} of shape "
                         f"{tuple(value.shape)}, whose str() elides values: key a digest of it "
                         f"(e.g. course_lib.onnx_export.state_digest) or .tolist()")
    return str(value)


def unique_tmp(path: str | Path) -> Path:
    """A sibling of `path` that no other process or thread uses: <stem>.<pid>-<random>.tmp<suffix>."""
    path = Path(path)
    return path.with_name(f"{path.stem}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp{path.suffix}")


@contextmanager
def atomic_path(path: str | Path):
    """Yield a unique temporary name next to `path`; on success rename it to `path` (atomic: a
    reader never sees half a file, and two processes building the same file do not collide)."""
    path = Path(path)
    tmp = unique_tmp(path)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
