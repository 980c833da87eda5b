"""No flaky checks: every official solution and every honest variant of tests/corpus/ passes every
auto-graded item at many seeds of the hidden cases (in this process, as the notebook's `check(...)`
runs them). A check whose case generator can fail the reference is a bug, not bad luck.

`make test` runs a sample of seeds per case (`--seeds`, default 4: seeds 0..3 and one per lesson
and variant drawn from 4..199 by its name, so that different cases cover different seeds); the full
200 run: `pytest tests/test_check_seeds.py --seeds 200` (slow: minutes per lesson).
"""
from __future__ import annotations

import zlib

import pytest

from .test_corpus import CORPORA, LESSON, in_notebook_at_seeds

pytestmark = pytest.mark.grader

CASES = [(n, "solution", {}) for n in sorted(LESSON)] + \
        [(n, f"honest-{h.name}", h.answers) for n, c in sorted(CORPORA.items()) for h in c.HONEST]


def _seeds(count: int, name: str) -> list[int]:
    if count >= 200:
        return list(range(200))
    sample = list(range(max(count - 1, 1)))
    sample.append(4 + zlib.crc32(name.encode()) % 196)   # one more, spread over the 200 by case
    return sample


@pytest.mark.parametrize("number,name,answers", CASES, ids=[f"lesson{n:02d}-{name}" for n, name, _ in CASES])
def test_reference_and_honest_variants_pass_at_every_seed(number, name, answers, request):
    failures = []
    seeds = _seeds(request.config.getoption("--seeds"), f"{number}:{name}")
    for seed, results in in_notebook_at_seeds(number, answers, seeds).items():
        for item, result in results.items():
            if not result.passed:
                failures.append(f"seed {seed}, {item}: {result.feedback}")
    assert not failures, f"lesson {number:02d} {name} failed {len(failures)} time(s): " + " | ".join(failures[:5])
