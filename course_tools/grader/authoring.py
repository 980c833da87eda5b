"""The check-authoring API: how a lesson's checks are written and registered.

A check compares the learner's object with the course's reference on randomized cases
(hidden from the notebook) and raises `CheckFailed` with a sentence that names the case
and says what was expected and what came back. Checks run their hint cases (the ones whose name
asks "did you ...?") first, so a learner who makes the classic mistake is told so.

Lesson modules register their checks in `course_tools/checks/lessonNN.py`:

    @exercise("01.sdpa", points=2, uses=("scaled_dot_product_attention",))
    def check_sdpa(fn, rng):
        ...

The grader (run.py) runs them on proxies of the learner's objects; the notebook's `check(...)`
(course_tools/grading.py) runs them on the objects themselves.
"""
from __future__ import annotations

import importlib
import math
import numbers
import pkgutil
from dataclasses import dataclass
from typing import Callable

import torch

from .errors import CheckFailed   # noqa: F401 - the checks raise it; importable from here with the rest


@dataclass(frozen=True)
class Exercise:
    id: str
    points: int
    uses: tuple[str, ...]
    run: Callable
    title: str
    forbids: tuple[str, ...] = ()
    manual: bool = False            # a written answer: a person grades it by `rubric`
    rubric: tuple[str, ...] = ()    # the must-mention points, shown only after the learner wrote


REGISTRY: dict[str, Exercise] = {}


def exercise(exercise_id: str, *, points: int, uses: tuple[str, ...] | str, title: str = "",
             forbids: tuple[str, ...] = (), registry: dict | None = None):
    """Register a check. `uses` names the learner's objects the check receives, in order;
    `forbids` ("module:qualname", e.g. "torch.nn.functional:gelu") adds to what the exercise
    forbids (course_tools/shortcuts.py lists the defaults per exercise). `registry`: another
    registry than the lessons' REGISTRY (the whiteboard drill's checks keep their own)."""
    uses = (uses,) if isinstance(uses, str) else tuple(uses)
    if type(points) is not int or points < 0:
        raise ValueError(f"{exercise_id}: points must be a non-negative int")

    def register(run):
        (REGISTRY if registry is None else registry)[exercise_id] = Exercise(
            exercise_id, points, uses, run, title or (run.__doc__ or "").strip().split("\n")[0], tuple(forbids))
        return run
    return register


WRITTEN_NAME = "written_answer"   # the variable that holds a lesson's written answer
MIN_WORDS = 25                    # fewer words than this is not yet an answer (3-5 sentences asked)


def written(exercise_id: str, *, points: int, rubric: tuple[str, ...], title: str = ""):
    """Register a manually graded written answer: the learner's `written_answer` string, 3-5
    sentences in their own words. Nothing is auto-graded: the check only refuses an empty or
    one-line answer; `course grade` reports the text with `rubric` "to be graded by the
    instructor", and `check(...)` shows the learner the rubric once they have written something
    (as nbgrader's manually graded cells and Gradescope's manual questions do)."""
    if type(points) is not int or points <= 0:
        raise ValueError(f"{exercise_id}: points must be a positive int")
    if not rubric or not all(isinstance(r, str) and r.strip() for r in rubric):
        raise ValueError(f"{exercise_id}: rubric must list the must-mention points")

    def run(text, rng=None):
        if not isinstance(text, str):
            raise CheckFailed(f"`{WRITTEN_NAME}` should be a string (your answer in words), "
                              f"got {type(text).__name__}")
        words = len(text.split())
        if words < MIN_WORDS:
            raise CheckFailed(f"write your answer in `{WRITTEN_NAME}` first: 3-5 sentences in your own "
                              f"words (got {words} words, expected at least {MIN_WORDS})")
        return f"recorded ({words} words); to be graded by the instructor"

    REGISTRY[exercise_id] = Exercise(exercise_id, points, (WRITTEN_NAME,), run,
                                     title or "A written answer, graded by the instructor",
                                     manual=True, rubric=tuple(rubric))
    return REGISTRY[exercise_id]


def passed_feedback(note) -> str:
    """The verdict of a passing item: a check may return a note (a predict-then-measure item says
    what the learner predicted beside what they measured)."""
    return "all cases passed" + (f"; {note}" if isinstance(note, str) and note.strip() else "")


def load_all() -> dict[str, Exercise]:
    """Import every module of `course_tools.checks` so that its checks register."""
    from .. import checks
    for info in pkgutil.iter_modules(checks.__path__):
        importlib.import_module(f"{checks.__name__}.{info.name}")
    return REGISTRY


# ---------------------------------------------------------------- feedback helpers

def _shape(t) -> tuple:
    return tuple(t.shape)


def expect_tensor(case: str, got, name: str = "your result") -> torch.Tensor:
    if not isinstance(got, torch.Tensor):
        raise CheckFailed(f"[{case}] {name} should be a torch.Tensor, got {type(got).__name__}")
    return got


def expect_shape(case: str, got, expected_shape, name: str = "your result") -> None:
    expect_tensor(case, got, name)
    expected_shape = tuple(expected_shape)
    if _shape(got) != expected_shape:
        hint = ""
        if sorted(_shape(got)) == sorted(expected_shape):
            hint = " - the same sizes in another order: a missing or extra transpose?"
        elif got.numel() == torch.Size(expected_shape).numel():
            hint = " - the same number of elements: a wrong view/reshape?"
        raise CheckFailed(f"[{case}] {name} has shape {_shape(got)}, expected {expected_shape}{hint}")


def expect_close(case: str, got, expected: torch.Tensor, atol: float = 1e-5, rtol: float = 1e-5,
                 name: str = "your result") -> None:
    expect_shape(case, got, expected.shape, name)
    got = got.detach().to(expected.device, expected.dtype)
    if torch.isnan(got).any() and not torch.isnan(expected).any():
        where = tuple(torch.nonzero(torch.isnan(got))[0].tolist())
        raise CheckFailed(f"[{case}] {name} contains NaN (first at index {where}); "
                          "a fully masked row or a division by zero?")
    if not torch.allclose(got, expected, atol=atol, rtol=rtol, equal_nan=True):
        diff = (got - expected).abs().nan_to_num(0)
        where = tuple(torch.nonzero(diff == diff.max())[0].tolist())
        raise CheckFailed(f"[{case}] {name} differs from the reference: max |difference| "
                          f"{diff.max().item():.3g} at index {where} (got {got[where].item():.5g}, "
                          f"expected {expected[where].item():.5g}; tolerance {atol:g})")


def expect_scalar(case: str, got, name: str = "your result") -> torch.Tensor:
    """`got` should be one number kept as a 0-d tensor (a loss, say: backward() needs the tensor,
    so a Python float will not do); returns it."""
    expect_tensor(case, got, name)
    if got.dim() != 0:
        raise CheckFailed(f"[{case}] {name} should be a single number, a 0-d tensor, "
                          f"got shape {_shape(got)}")
    return got


def expect_tuple(case: str, got, names: tuple[str, ...], *, lists: bool = False, by: str = "") -> tuple | list:
    """`got` should be a tuple of len(names) values, the ones `names` lists (a list too when
    `lists`); returns it. `by` names what should return it ("forward"). The feedback says how many
    values came back: "return a tuple, got tuple" would not tell a learner what is wrong."""
    if isinstance(got, (tuple, list) if lists else tuple) and len(got) == len(names):
        return got
    came = f"a {type(got).__name__} of {len(got)} values" if isinstance(got, (tuple, list)) else type(got).__name__
    ask = f"{by} should return" if by else "return"
    raise CheckFailed(f"[{case}] {ask} a tuple ({', '.join(names)}), got {came}")


def expect_number(case: str, got, name: str = "your result") -> float:
    """`got` should be one finite number (a Python number or a one-element tensor); returns it as a float."""
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.detach().double().item()
    if isinstance(got, bool) or not isinstance(got, numbers.Real):
        shape = tuple(got.shape) if isinstance(got, torch.Tensor) else ""
        raise CheckFailed(f"[{case}] {name} should be one number (a float or a 0-d tensor), "
                          f"got {type(got).__name__}{shape}")
    if not math.isfinite(got):
        raise CheckFailed(f"[{case}] {name} is {got}, not a finite number")
    return float(got)


def call_learner(case: str, fn, *args, **kwargs):
    """Call the learner's `fn`; an exception it raises becomes feedback that names the case."""
    try:
        return fn(*args, **kwargs)
    except (CheckFailed, NotImplementedError):
        raise
    except Exception as error:  # noqa: BLE001 - the learner's code
        raise CheckFailed(f"[{case}] your code raised {type(error).__name__}: {error}") from None


def expect_value_error(case: str, call, *, what: str = "", returned: str | None = None) -> ValueError:
    """`call()` runs the learner's code on an input it should refuse: return the ValueError it
    raises. Another exception, or a result, fails the case: "expected a ValueError{what}, got
    KeyError: ..." / "expected a ValueError, but {returned}" (default: the result's shape).
    NotImplementedError passes through (the exercise is not done yet)."""
    try:
        got = call()
    except ValueError as error:
        return error
    except (CheckFailed, NotImplementedError):
        raise
    except Exception as error:  # noqa: BLE001 - the learner's code
        raise CheckFailed(f"[{case}] expected a ValueError{what}, got {type(error).__name__}: {error}") from None
    returned = returned or f"got a result of shape {tuple(getattr(got, 'shape', ()))}"
    raise CheckFailed(f"[{case}] expected a ValueError, but {returned}")


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


# ---------------------------------------------------------------- random cases

def randint(rng: torch.Generator, low: int, high: int) -> int:
    """One random int in [low, high): `high` is excluded, as in `torch.randint`.

    The checks draw their sizes and counts with it. It makes exactly one draw,
    `torch.randint(low, high, (1,), generator=rng)`, so a seed keeps giving the same cases."""
    return int(torch.randint(low, high, (1,), generator=rng))
