"""Graded checks for lesson 25: asymmetric (affine) per-channel uint8 quantisation - the scheme the
lesson does not use - its dequantisation, and when it beats the symmetric one.

Convention (PyTorch's per-channel affine quint8): per output row, the range [min(row_min, 0),
max(row_max, 0)] (zero always representable) maps onto 0..255; scale = range / 255 (1 for a row of
zeros), zero_point = clamp(-round(min / scale), 0, 255), q = clamp(round(w / scale) + zero_point, 0, 255).
The references are written here, in float32 as the task states."""
import torch

from ..grading import CheckFailed, exercise, expect, expect_close, expect_shape, expect_tensor, expect_tuple, randint

FORBIDS = ("torch:quantize_per_channel", "torch:quantize_per_tensor", "torch:fake_quantize_per_channel_affine",
           "torch:fake_quantize_per_tensor_affine", "torch:Tensor.int_repr", "torch:Tensor.dequantize",
           "torch:dequantize", "torch.ao.quantization:quantize_dynamic")


def reference_quantize(w):
    w = w.to(torch.float32)
    lo = w.amin(dim=1).clamp(max=0)
    hi = w.amax(dim=1).clamp(min=0)
    scale = (hi - lo) / 255
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    zero_point = (-torch.round(lo / scale)).clamp(0, 255)
    q = (torch.round(w / scale[:, None]) + zero_point[:, None]).clamp(0, 255)
    return q.to(torch.uint8), scale, zero_point.to(torch.int64)


def reference_dequantize(q, scale, zero_point):
    return (q.to(torch.float32) - zero_point.to(torch.float32)[:, None]) * scale.to(torch.float32)[:, None]


def symmetric_error(w):
    scale = w.abs().amax(dim=1) / 127
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    approx = torch.round(w / scale[:, None]).clamp(-127, 127) * scale[:, None]
    return float(torch.linalg.norm(w - approx) / torch.linalg.norm(w))


def asymmetric_error(w):
    return float(torch.linalg.norm(w - reference_dequantize(*reference_quantize(w))) / torch.linalg.norm(w))


def _weight(rng, case):
    """Rows of different scales and offsets: symmetric, all-positive (post-ReLU-like), all-negative,
    one constant row and one zero row."""
    out_f = randint(rng, 4, 30)
    in_f = randint(rng, 2, 40)
    w = torch.randn(out_f, in_f, generator=rng) * (torch.rand(out_f, 1, generator=rng) * 0.5 + 0.01)
    kind = torch.randint(0, 3, (out_f,), generator=rng)
    w[kind == 1] = w[kind == 1].abs() + 0.2                      # all positive, away from 0
    w[kind == 2] = -w[kind == 2].abs()                           # all negative
    if case == 0:
        w[0] = 0.0
        w[1] = 0.37                                              # a constant positive row
    if case == 3:
        w = w * 1e3                                              # large magnitudes
    return w


@exercise("25.asymmetric", points=3, uses="quantize_asymmetric", forbids=FORBIDS)
def check_asymmetric(fn, rng):
    """uint8 q, float32 scale and integer zero_point per row; zero exactly representable."""
    for case in range(6):
        w = _weight(rng, case)
        name = f"case {case}: weight {tuple(w.shape)}{' (x1000)' if case == 3 else ''}"
        q, scale, zero_point = (expect_tensor(name, t, n) for t, n in
                                zip(expect_tuple(name, fn(w.clone()), ("q", "scale", "zero_point"), lists=True), ("q", "scale", "zero_point")))
        want_q, want_scale, want_zp = reference_quantize(w)
        expect(q.dtype == torch.uint8, f"[{name}] q should have dtype torch.uint8 (0..255), got {q.dtype}")
        expect_shape(name, q, w.shape, "q")
        if scale.numel() == 1 and w.shape[0] > 1:
            raise CheckFailed(f"[{name}] one scale for the whole matrix: give every output row its own")
        expect(not zero_point.is_floating_point(), f"[{name}] zero_point should be an integer tensor, "
               f"got {zero_point.dtype}")
        scale, zero_point = scale.reshape(-1).to(torch.float32), zero_point.reshape(-1).to(torch.int64)
        plain = (w.amax(1) - w.amin(1)) / 255
        plain = torch.where(plain > 0, plain, torch.ones_like(plain))
        rows_off_zero = ((w.amin(1) > 0) | (w.amax(1) < 0)) & ~torch.isclose(plain, want_scale, rtol=1e-4)
        if rows_off_zero.any() and torch.allclose(scale[rows_off_zero], plain[rows_off_zero], rtol=1e-5):
            r = int(torch.nonzero(rows_off_zero)[0])
            raise CheckFailed(f"[{name}] row {r} (min {w[r].min().item():.4g}, max {w[r].max().item():.4g}): "
                              f"scale {scale[r].item():.4g}, expected {want_scale[r].item():.4g} - the range "
                              f"must include 0 (min(row_min, 0) .. max(row_max, 0)) so that 0 is exact")
        bad_zero = (want_scale == 1) & (~torch.isfinite(scale) | (scale == 0))
        if bad_zero.any():
            raise CheckFailed(f"[{name}] a row of zeros gave scale {scale[bad_zero][0].item()}: "
                              f"use scale 1 when the range is 0")
        expect_close(name, scale, want_scale, atol=0, rtol=1e-5, name="scale")
        if not torch.equal(zero_point, want_zp):
            r = int(torch.nonzero(zero_point != want_zp)[0])
            raise CheckFailed(f"[{name}] row {r}: zero_point {int(zero_point[r])}, expected {int(want_zp[r])} "
                              f"(-round(min(row_min, 0) / scale), in 0..255)")
        diff = (q.to(torch.int64) - want_q.to(torch.int64)).abs()
        ratio = w / want_scale[:, None]
        tie = ((ratio - ratio.floor()) - 0.5).abs() < 1e-3         # float64 inside may round a tie the other way
        if (diff > 1).any() or ((diff == 1) & ~tie).any():
            r, c = (int(v) for v in torch.nonzero((diff > 1) | ((diff == 1) & ~tie))[0])
            hint = ""
            if int(q[r, c]) in (0, 255) and 0 < int(want_q[r, c]) < 255:
                hint = " - q = round(w / scale) + zero_point, clamped to 0..255"
            raise CheckFailed(f"[{name}] q[{r}, {c}] = {int(q[r, c])}, expected {int(want_q[r, c])} (w = "
                              f"{w[r, c].item():.5g}, scale {want_scale[r].item():.4g}, zero_point "
                              f"{int(want_zp[r])}){hint}")


@exercise("25.dequantize", points=1, uses="dequantize_asymmetric", forbids=FORBIDS)
def check_dequantize(fn, rng):
    """scale * (q - zero_point) in float32, with q uint8 (no wrap-around)."""
    for case in range(4):
        w = _weight(rng, case)
        q, scale, zp = reference_quantize(w)
        name = f"case {case}: q {tuple(q.shape)} uint8, zero_points {zp[:6].tolist()}..."
        got = expect_tensor(name, fn(q.clone(), scale.clone(), zp.clone()), "dequantize_asymmetric(...)")
        expected = reference_dequantize(q, scale, zp)
        expect_shape(name, got, expected.shape)
        got = got.to(torch.float32)
        wrapped = ((q - zp.to(torch.uint8)[:, None]).to(torch.float32)) * scale[:, None]
        if not torch.allclose(got, expected, rtol=1e-5, atol=1e-6) and torch.allclose(got, wrapped, rtol=1e-5):
            raise CheckFailed(f"[{name}] q - zero_point was computed in uint8 and wrapped around (0 - 64 = 192): "
                              f"convert q to a signed or float type first")
        expect_close(name, got, expected, atol=1e-6, rtol=1e-5, name="dequantize_asymmetric(...)")


@exercise("25.errors", points=2, uses="quantization_errors", forbids=FORBIDS)
def check_errors(fn, rng):
    """(symmetric int8 per-channel error, asymmetric uint8 per-channel error), relative Frobenius."""
    for case in range(4):
        w = _weight(rng, case + 1)
        if case == 2:
            w = w.abs() + 0.5                                      # all positive: asymmetric wins
        name = f"case {case}: weight {tuple(w.shape)}{' (all positive)' if case == 2 else ''}"
        got = fn(w.clone())
        expect_tuple(name, got, ("symmetric_error", "asymmetric_error"), lists=True)
        expected = (symmetric_error(w), asymmetric_error(w))
        for k, (label, value, want) in enumerate(zip(("symmetric", "asymmetric"), got, expected)):
            value = float(value.item() if isinstance(value, torch.Tensor) else value)
            if abs(value - want) > 1e-5 + 1e-3 * want:
                hint = ""
                if abs(value - expected[1 - k]) < 1e-6:
                    hint = " (that is the other scheme's error: the order is (symmetric, asymmetric))"
                elif abs(value - want * float(torch.linalg.norm(w))) < 1e-4 * max(1.0, value):
                    hint = " (divide by ||W||: the error is relative)"
                raise CheckFailed(f"[{name}] {label} relative error: expected {want:.6f}, got {value:.6f}{hint}")
