"""`python -m course_tools.gradescope run|install|grade-one`: the command a Gradescope autograder
bundle runs on Gradescope's workers (its setup.sh and run_autograder name it, and the runner calls
it again as an unprivileged user). The work is `course_tools.lms.gradescope_run`; the command keeps
this name so that the bundle's scripts, and the bundles already built, stay as they are."""
import sys

from .lms.gradescope_run import main

if __name__ == "__main__":
    sys.exit(main())
