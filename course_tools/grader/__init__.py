"""`course grade PATH`: grade a learner's exercise notebook without trusting it.

The pipeline, each step a module (CONTRIBUTING.md, "The grading pipeline"): notebook.py reads
and rebuilds the notebook; run.py runs it and grades it item by item; channel.py owns the
learner's process (isolation.py: its walls); codec.py is the byte format both ways; proxy.py
makes the learner's objects look local to the checks. learner/ is what runs inside the learner's
process. The checks are written with authoring.py; every exception lives in errors.py.

Importing the package is cheap (no torch): `course`'s commands and the self-check import it.
"""
from .errors import GradeError
from .notebook import lesson_of, official_items, read_notebook, rebuild, validate
from .run import NOTEBOOK_TIMEOUT, format_report, grade, item_seed

__all__ = ["GradeError", "NOTEBOOK_TIMEOUT", "format_report", "grade", "item_seed", "lesson_of", "official_items",
           "read_notebook", "rebuild", "validate"]
