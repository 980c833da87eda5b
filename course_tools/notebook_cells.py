"""What marks the cells of an exercise notebook: the answer cells' tag and the grading call.

The one definition, imported by the grader (`grader.py`, which matches a learner's answers to the
official cells), the notebook's `check` (`grading.py`, which leaves grading cells out of the
shortcut rules) and `course check` (`selfcheck.py`, which reads a notebook's grading cells), so
all three read a notebook alike. Standard library only: importing it is cheap (no torch), as the
self-check's pytest plugin needs.
"""
from __future__ import annotations

import re

#: The tag of an answer cell (`course exercises` keeps it on the cells it strips).
ANSWER_TAG = "answer"
#: A grading call in a cell, `check("NN.item", ...)`; group 1 is the exercise id.
GRADE_CALL = re.compile(r"""^\s*check\(\s*["']([^"']+)["']""", re.M)
