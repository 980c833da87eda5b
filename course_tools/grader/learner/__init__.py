"""The learner's side of grading: what runs inside the learner's isolated process.

server.py answers the grader's requests (run a cell, call an object); tripwires.py and
kernel_watch.py note whether a graded call ran a forbidden object. Nothing here imports the checks.
"""
