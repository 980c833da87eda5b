"""course_lib.cache: source digests follow imports, keys change with every input, temp names are
unique per process and call."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from course_lib import cache


def _package(tmp_path: Path) -> Path:
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("from .b import f\n\ndef g():\n    from . import c\n")
    (tmp_path / "b.py").write_text("def f():\n    return 1\n")
    (tmp_path / "c.py").write_text("X = 1\n")
    (tmp_path / "unrelated.py").write_text("Y = 2\n")
    return tmp_path


def test_source_modules_follow_relative_imports_transitively(tmp_path):
    pkg = _package(tmp_path)
    names = [p.name for p in cache.source_modules(pkg / "a.py")]
    assert names == ["__init__.py", "a.py", "b.py", "c.py"]          # not unrelated.py


def test_source_digest_changes_with_any_imported_file(tmp_path):
    pkg = _package(tmp_path)
    before = cache.source_digest(cache.source_modules(pkg / "a.py"))
    assert before == cache.source_digest(cache.source_modules(pkg / "a.py"))
    (pkg / "unrelated.py").write_text("Y = 3\n")
    assert cache.source_digest(cache.source_modules(pkg / "a.py")) == before
    (pkg / "b.py").write_text("def f():\n    return 2\n")
    assert cache.source_digest(cache.source_modules(pkg / "a.py")) != before


def test_pretraining_keys_its_checkpoints_with_these_helpers():
    """One recipe: pretraining's source list, digest and key are course_lib.cache's."""
    from course_lib import pretraining

    files = pretraining.source_modules()
    assert files == cache.source_modules(Path(pretraining.__file__))
    assert pretraining.source_digest() == cache.source_digest(files)
    config = pretraining.PretrainConfig()
    inputs = {"config": dataclasses.asdict(config), "seed": 0, "threads": 1}
    assert pretraining.cache_key(config, 0, 1) == cache.cache_key(
        inputs, cache.versions("torch"), cache.source_digest(files), length=12)
    assert pretraining.cache_path(config, 0, num_threads=1).parent == cache.cache_dir("pretraining")


def test_cache_key_changes_with_inputs_versions_and_source():
    key = cache.cache_key({"w": "abc", "heads": 12}, {"torch": "2.0"}, "src")
    assert key == cache.cache_key({"heads": 12, "w": "abc"}, {"torch": "2.0"}, "src")   # order-free
    assert len(key) == 16
    others = [cache.cache_key({"w": "abc", "heads": 6}, {"torch": "2.0"}, "src"),
              cache.cache_key({"w": "abc", "heads": 12}, {"torch": "2.1"}, "src"),
              cache.cache_key({"w": "abc", "heads": 12}, {"torch": "2.0"}, "src2")]
    assert len({key, *others}) == 4


def test_versions_of_installed_and_absent_packages():
    found = cache.versions("torch", "surely-not-a-package-xyz")
    assert found["torch"] and found["surely-not-a-package-xyz"] == "absent"


def test_unique_tmp_names_and_atomic_path(tmp_path):
    target = tmp_path / "model.onnx"
    a, b = cache.unique_tmp(target), cache.unique_tmp(target)
    assert a != b and a.parent == target.parent and str(os.getpid()) in a.name
    assert a.suffix == ".onnx" and a.name != target.name
    with cache.atomic_path(target) as tmp:
        tmp.write_text("done")
    assert target.read_text() == "done" and list(tmp_path.iterdir()) == [target]
    with pytest.raises(RuntimeError):
        with cache.atomic_path(tmp_path / "other.onnx") as tmp:
            tmp.write_text("half")
            raise RuntimeError("export failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"]      # no leftovers


def test_cache_dir_is_created(tmp_path):
    folder = cache.cache_dir("onnx", root=tmp_path)
    assert folder == tmp_path / "onnx" and folder.is_dir()
