"""The course's machinery: command line, lesson runner, manifest, exercise generator, grader and
its checks. Lessons never import from here (except lesson 00, which shows the workflow); what the
lessons build lives in `course_lib`.
"""
from pathlib import Path

#: The repository root (the package is installed in editable mode from it).
ROOT = Path(__file__).resolve().parent.parent
