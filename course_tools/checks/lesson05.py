"""Graded checks for lesson 05: the sinusoidal position table."""
import torch

from ..grading import CheckFailed, exercise, expect, expect_close, expect_shape
from course_lib.positional import sinusoidal_table as reference


def _mistakes(max_len: int, d_model: int) -> dict[str, torch.Tensor]:
    """Tables produced by the usual slips, to name the slip in the feedback."""
    p = torch.arange(max_len, dtype=torch.float64)[:, None]
    j = torch.arange(d_model, dtype=torch.float64)
    per_column = p / 10000.0 ** (j / d_model)                     # exponent j/d, not 2i/d
    wrong_exponent = torch.where(j.long() % 2 == 0, per_column.sin(), per_column.cos())
    angle = p / 10000.0 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    swapped = torch.zeros(max_len, d_model, dtype=torch.float64)
    swapped[:, 0::2] = angle.cos()
    swapped[:, 1::2] = angle[:, : d_model // 2].sin()
    halves = torch.cat([angle.sin(), angle[:, : d_model // 2].cos()], dim=1)
    return {"sines and cosines are swapped: even columns (0, 2, ...) hold the sines": swapped,
            "the exponent should be 2i/d_model for both columns of pair i (columns 2i and 2i+1 share "
            "one frequency), not column/d_model": wrong_exponent,
            "the sines and cosines should be interleaved (sin, cos, sin, cos, ...), not in two "
            "halves": halves}


def _compare(fn, max_len: int, d_model: int, atol: float) -> None:
    case = f"sinusoidal_table({max_len}, {d_model})"
    try:
        got = fn(max_len, d_model)
    except RuntimeError as error:                      # NotImplementedError is one too
        if d_model % 2 == 0 or isinstance(error, NotImplementedError):
            raise
        raise CheckFailed(f"[{case}] your code raised RuntimeError: {error} - with an odd d_model there "
                          f"are {d_model // 2 + 1} sine columns but only {d_model // 2} cosine columns") from None
    expected = reference(max_len, d_model)
    expect_shape(case, got, expected.shape)
    expect(got.dtype == torch.float32, f"[{case}] return a float32 tensor (convert with .float() at the "
                                       f"end), got {got.dtype}")
    got = got.detach().cpu()
    if not torch.allclose(got, expected, atol=atol, rtol=0):
        for slip, table in _mistakes(max_len, d_model).items():
            if torch.allclose(got.double(), table, atol=1e-3, rtol=0):
                raise CheckFailed(f"[{case}] {slip}")
    expect_close(case, got, expected, atol=atol, rtol=0)


def _sizes(rng, low: int, high: int, odd: bool) -> tuple[int, int]:
    max_len = int(torch.randint(low, high, (1,), generator=rng))
    half = int(torch.randint(1, 40, (1,), generator=rng))
    return max_len, 2 * half + 1 if odd else 2 * half


@exercise("05.sinusoidal-even", points=2, uses="sinusoidal_table")
def check_even(fn, rng):
    """Even d_model on random sizes up to 600 positions, and BERT-base's (512, 768)."""
    for _ in range(6):
        _compare(fn, *_sizes(rng, 1, 601, odd=False), atol=1e-4)
    _compare(fn, 512, 768, atol=1e-4)


@exercise("05.sinusoidal-odd", points=1, uses="sinusoidal_table")
def check_odd(fn, rng):
    """Odd d_model: the last column is a sine without its cosine; includes d_model = 1."""
    _compare(fn, 7, 1, atol=1e-4)
    for _ in range(5):
        _compare(fn, *_sizes(rng, 1, 601, odd=True), atol=1e-4)


@exercise("05.sinusoidal-long", points=1, uses="sinusoidal_table")
def check_long(fn, rng):
    """Thousands of positions, to 1e-5: the angles must be computed in float64."""
    for _ in range(2):
        max_len, d_model = _sizes(rng, 8_000, 20_001, odd=bool(torch.randint(0, 2, (1,), generator=rng)))
        case = f"sinusoidal_table({max_len}, {d_model})"
        got = fn(max_len, d_model)
        expected = reference(max_len, d_model)
        expect_shape(case, got, expected.shape)
        error = (got.detach().cpu().double() - expected.double()).abs().max().item()
        expect(error < 1e-5 or error > 5e-3,
               f"[{case}] max |difference| {error:.2g} at large positions: float32 angles lose "
               f"precision there (position × frequency is only known to ~1e-3 near 20,000); compute "
               f"the angles in float64 and convert the finished table to float32")
        _compare(fn, max_len, d_model, atol=1e-5)
