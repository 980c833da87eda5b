"""Transformers, Question by Question: the course's helper library.

One concept per module; lessons build a piece in the open, later lessons import it from here.
"""
from pathlib import Path

__version__ = "0.1.0"

#: The repository root (the package is installed in editable mode from it).
ROOT = Path(__file__).resolve().parent.parent
