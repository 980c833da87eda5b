"""Graded checks for lesson 25: symmetric int8 quantisation of a weight matrix, per tensor and
per output channel (row), and its error."""
import torch

from course_lib.fast_inference import (dequantize_int8, quantize_per_channel_int8,
                                       quantize_per_tensor_int8)
from ..grading import CheckFailed, exercise, expect, expect_close, expect_shape, expect_tensor


def _weight(rng, case):
    """A random (out, in) weight whose rows have very different scales, with one outlier row,
    like a trained feed-forward matrix; case 0 also has an all-zero row."""
    out_f = int(torch.randint(3, 40, (1,), generator=rng))
    in_f = int(torch.randint(2, 50, (1,), generator=rng))
    w = torch.randn(out_f, in_f, generator=rng) * torch.rand(out_f, 1, generator=rng) * 0.1
    w[int(torch.randint(0, out_f, (1,), generator=rng))] *= 30
    if case == 0:
        w[out_f - 1] = 0.0
    return w


def _pair(case, got):
    if not (isinstance(got, (tuple, list)) and len(got) == 2):
        raise CheckFailed(f"[{case}] return a tuple (q, scale), got {type(got).__name__}")
    return got


@exercise("25.per-channel", points=3, uses="quantize_per_channel")
def check_per_channel(fn, rng):
    """q int8 in [-127, 127] and one scale per row, max|row| / 127, rounding to nearest."""
    for case in range(5):
        w = _weight(rng, case)
        name = f"case {case}: weight {tuple(w.shape)}"
        q, scale = _pair(name, fn(w.clone()))
        q, scale = expect_tensor(name, q, "q"), expect_tensor(name, scale, "scale")
        expect(q.dtype == torch.int8, f"[{name}] q should have dtype torch.int8, got {q.dtype}")
        expect_shape(name, q, w.shape, "q")
        want_q, want_scale = quantize_per_channel_int8(w)
        if scale.numel() == 1 and w.shape[0] > 1:
            raise CheckFailed(f"[{name}] one scale for the whole matrix: that is per-tensor; "
                              f"give every output row (dim 0) its own scale, shape ({w.shape[0]},)")
        scale = scale.reshape(-1)
        expect_close(name, scale, want_scale, atol=1e-8, rtol=1e-5, name="scale")
        expect(int(q.to(torch.int32).min()) >= -127,
               f"[{name}] q reaches {int(q.min())}: symmetric int8 uses -127..127")
        expect_close(name, q.to(torch.float32), want_q.to(torch.float32), atol=0, rtol=0, name="q")


@exercise("25.dequantize", points=1, uses="dequantize")
def check_dequantize(fn, rng):
    """scale * q, per tensor (0-d scale) and per row ((out,) scale)."""
    for case in range(4):
        w = _weight(rng, case)
        quant = quantize_per_tensor_int8 if case % 2 else quantize_per_channel_int8
        q, scale = quant(w)
        name = f"case {case}: q {tuple(q.shape)}, scale {tuple(scale.shape)}"
        got = fn(q.clone(), scale.clone())
        expect_close(name, expect_tensor(name, got).to(torch.float32), dequantize_int8(q, scale),
                     atol=1e-7, rtol=1e-6)


@exercise("25.errors", points=2, uses="quantization_errors")
def check_errors(fn, rng):
    """(per-tensor error, per-channel error): relative Frobenius norms ||W - deq(q)|| / ||W||."""
    for case in range(4):
        w = _weight(rng, case + 1)
        name = f"case {case}: weight {tuple(w.shape)}"
        got = fn(w.clone())
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise CheckFailed(f"[{name}] return (per_tensor_error, per_channel_error), "
                              f"got {type(got).__name__}")
        expected = []
        for quant in (quantize_per_tensor_int8, quantize_per_channel_int8):
            approx = dequantize_int8(*quant(w))
            expected.append(float(torch.linalg.norm(w - approx) / torch.linalg.norm(w)))
        for label, value, want in zip(("per-tensor", "per-channel"), got, expected):
            value = float(value.item() if isinstance(value, torch.Tensor) else value)
            if abs(value - want) > 1e-5 + 1e-3 * want:
                hint = ""
                if abs(value - expected[1 - ("per-channel" == label)]) < 1e-6:
                    hint = " (that is the other scheme's error: order is (per_tensor, per_channel))"
                raise CheckFailed(f"[{name}] {label} relative error: expected {want:.6f}, "
                                  f"got {value:.6f}{hint}")
