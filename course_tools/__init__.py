"""The course's machinery: command line, lesson runner, manifest, exercise generator, grader and
its checks. Lessons never import from here (except lesson 00, which shows the workflow); what the
lessons build lives in `course_lib`.
"""
# The repository root: one definition, course_lib's (both packages are installed, in editable
# mode, from the same checkout).
from course_lib import ROOT  # noqa: F401
