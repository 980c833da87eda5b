"""Transformers, Question by Question: the course's helper library.

One concept per module; lessons build a piece in the open, later lessons import it from here.
"""
from pathlib import Path

__version__ = "0.1.0"

#: The repository root (the package is installed in editable mode from it).
ROOT = Path(__file__).resolve().parent.parent

import warnings as _warnings

# tqdm.auto (used by transformers) warns once per kernel when ipywidgets is absent; the course
# uses plain text progress bars, so the warning is noise in every stored notebook.
_warnings.filterwarnings("ignore", message="IProgress not found")
