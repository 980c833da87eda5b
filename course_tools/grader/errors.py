"""Every exception of the grading pipeline, in one place.

Two families, told apart by their base class:

- `Exception`s a check may meet and report as feedback: `CheckFailed` (a case failed: its message
  is the verdict), `LearnerError` and `learner_exception(...)` (what the learner's code raised,
  rebuilt here by name and message only), `GradeError` (the submission cannot be graded at all).
- `BaseException`s a check must never swallow with `except Exception`: the learner's process died
  or ran out of time (`LearnerDied`, `Timeout`, `NotebookTimeout`), sent malformed bytes
  (`ProtocolError`), or ran a forbidden object (`ShortcutUsed`). They end the item whatever the
  check's own `try` says.

Standard library only: the learner's process and `course`'s commands import it cheaply.
"""
from __future__ import annotations


class GradeError(ValueError):
    """The submission cannot be graded; `code` is a stable, machine-readable reason."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code

    def as_json(self) -> dict:
        return {"error": {"code": self.code, "message": str(self)}}


class SandboxError(RuntimeError):
    """The learner's process could not be isolated; the message names the cause and the fix."""


class CheckFailed(AssertionError):
    """A graded case failed; the message is the learner's feedback."""

    def _render_traceback_(self):
        # IPython shows these lines instead of a traceback: the verdict, not the machinery
        return [f"\x1b[1;31mFAILED\x1b[0m {self}"]


class OutOfTime(Exception):
    """The notebook's grading budget ran out (raised while a fresh learner process starts)."""


# ------------------------------------------------------------------ the learner's process, as the grader sees it

class LearnerDied(BaseException):
    """The learner's process ended, hit a limit, or was killed by the watchdog."""


class Timeout(LearnerDied):
    """The learner's process took longer than its budget (a cell's or an item's)."""


class NotebookTimeout(Timeout):
    """The notebook's whole grading budget ran out (not one item's)."""


class ProtocolError(BaseException):
    """The learner's process sent something that is not a well-formed reply."""


class ShortcutUsed(BaseException):
    """The learner's code ran an object the exercise forbids."""


class LearnerError(Exception):
    """An exception raised by the learner's code (name and message only)."""

    def __init__(self, type_name: str, message: str):
        super().__init__(message)
        self.type_name = type_name


_BUILTIN_ERRORS = {cls.__name__: cls for cls in (
    NotImplementedError, ValueError, TypeError, RuntimeError, IndexError, KeyError, AttributeError,
    NameError, ZeroDivisionError, AssertionError, OverflowError, MemoryError, RecursionError,
    LookupError, ArithmeticError, UnicodeError, FloatingPointError)}
_SUBCLASSES: dict = {}


def learner_exception(type_name: str, message: str, mro=()) -> Exception:
    """The learner's exception as the grader raises it: the nearest builtin class in its class
    hierarchy (`class StrideError(ValueError)` is caught by `except ValueError`), named like the
    learner's class; LearnerError when none is one of the builtins the checks may catch."""
    names = [type_name] + [entry[1] for entry in mro if isinstance(entry, list) and len(entry) == 2
                           and entry[0] == "builtins" and isinstance(entry[1], str)]
    cls = next((_BUILTIN_ERRORS[n] for n in names if n in _BUILTIN_ERRORS), None)
    if cls is None:
        return LearnerError(type_name, message)
    if cls.__name__ != type_name:
        name = type_name if type_name.isidentifier() else "LearnerException"
        key = (name, cls)
        if key not in _SUBCLASSES:
            _SUBCLASSES[key] = type(name, (cls,), {"__module__": "learner", "type_name": name})
        cls = _SUBCLASSES[key]
    error = cls(message)
    error.type_name = type_name
    return error
