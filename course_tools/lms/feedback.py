"""The feedback column: one short line per graded file (`summarize`: what passed, what failed and
why, the written answers left to a person), or why a file was not graded (`error_feedback`);
never longer than `FEEDBACK_CHARS`, so a spreadsheet cell stays readable."""
from __future__ import annotations

FEEDBACK_CHARS = 300


def short(text: str) -> str:
    """`text`, cut to FEEDBACK_CHARS with an ellipsis."""
    return text if len(text) <= FEEDBACK_CHARS else text[:FEEDBACK_CHARS - 1] + "…"


def summarize(report: dict) -> str:
    """One short line for the feedback column."""
    items = [i for i in report["items"] if not i.get("manual")]
    written = [i for i in report["items"] if i.get("manual")]
    failed = [i for i in items if not i["passed"]]
    by_hand = "".join(f"; {i['id']}: {'written, ' if i.get('answer') else 'not written, '}graded by hand"
                      for i in written)
    if not items:
        return "no graded items" + by_hand
    if not failed:
        return (f"all {len(items)} items passed" if len(items) > 1 else "the item passed") + by_hand
    if all("NotImplementedError" in i["feedback"] for i in failed) and len(failed) == len(items):
        return "not started: every answer still raises NotImplementedError" + by_hand
    text = f"{len(items) - len(failed)}/{len(items)} items passed; " + "; ".join(
        f"{i['id']}: {i['feedback']}" for i in failed) + by_hand
    return short(text)


def error_feedback(code: str) -> str:
    """What the student reads when their file was not graded, by the error's code."""
    return {"not-a-notebook": "not a notebook the grader can read: submit the exercise's .ipynb",
            "not-a-file": "not a regular file: submit the notebook itself",
            "too-large": "the notebook is too large: clear its outputs",
            "unknown-lesson": "not a course exercise (no lesson in its metadata): submit your copy of "
                              "the exercise notebook",
            "not-an-exercise": "a lesson notebook, not its exercise",
            "empty": "an empty folder", "unreadable": "could not be read",
            "missing": "no submission", "sandbox": "the grader could not run (the machine, not you)",
            "internal": "the grader failed on this file (the machine, not you)",
            }.get(code, "not graded")
