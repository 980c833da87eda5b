"""Grading a class for a learning-management system, and on Gradescope.

One job per module, read in this order:

- `names.py`: who a file of an LMS download belongs to, from its name (Canvas, Moodle), and file
  names as readable text whatever their bytes;
- `discovery.py`: every file of a submissions folder, one entry each, with why it cannot be graded;
- `roster.py`: reading a roster CSV and matching the submissions to its students;
- `lessons.py`: a lesson's title, points and written items, as the gradebook names them;
- `feedback.py`: the one-line feedback of a graded file, or why it was not graded;
- `parallel.py`: grading the entries in worker processes, one row each;
- `exports.py`: the CSV files: long, wide (a pandas pivot), Canvas, Moodle, written answers;
- `histograms.py`: the score histograms, one per lesson;
- `gradebook.py`: `course grade-class`, which puts the above together;
- `gradescope_bundle.py`: `course gradescope NN`, the autograder bundle;
- `gradescope_run.py`: what the bundle runs on Gradescope's workers
  (`python -m course_tools.gradescope`, kept at that name for the bundles' scripts).

Nothing is imported here: `from course_tools.lms.<module> import name`.
"""
