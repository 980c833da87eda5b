"""Graded checks for lesson 07: RMSNorm in mixed precision, and a BatchNorm over the real tokens of a
padded batch with running statistics (train and eval modes)."""
import torch
from torch import nn

from ..grading import CheckFailed, call_learner, exercise, expect, expect_close, randint

BATCH_NORM = ("torch.nn.functional:batch_norm", "torch:batch_norm", "torch:native_batch_norm",
              "torch.nn:BatchNorm1d", "torch.nn:BatchNorm2d", "torch.nn:SyncBatchNorm",
              "torch.nn.functional:instance_norm", "torch.nn:LazyBatchNorm1d")




def _rms_reference(x, weight, eps):
    x64 = x.double()
    return (x64 / torch.sqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * weight.double()).to(x.dtype)


def _compare_rms(fn, x, weight, eps, case, atol=1e-5, pass_eps=True):
    got = call_learner(case, fn, x, weight, eps) if pass_eps else call_learner(case, fn, x, weight)
    expected = _rms_reference(x, weight, eps)
    expect(isinstance(got, torch.Tensor) and got.dtype == x.dtype,
           f"[{case}] return x's dtype ({x.dtype}), got {getattr(got, 'dtype', type(got).__name__)}")
    expect_close(case, got.float(), expected.float(), atol=atol, rtol=atol)


@exercise("07.rms-norm", points=2, uses="rms_norm")
def check_rms(fn, rng):
    """x / sqrt(mean(x²) + eps) · weight over the last dim; float16/bfloat16 computed in float32."""
    x, w = torch.randn(3, 8, generator=rng), torch.rand(8, generator=rng) + 0.5
    _compare_rms(fn, x + 2.0, w, 1e-6, "x (3, 8) with mean 2: RMSNorm does not subtract the mean")
    x = torch.randn(4, 6, generator=rng) * 0.05
    _compare_rms(fn, x, torch.ones(6), 1e-2, "small x (std 0.05), eps=0.01: eps goes inside the square root, "
                                             "added to mean(x²)")
    for i in range(4):
        lead = tuple(int(n) for n in torch.randint(1, 5, (randint(rng, 1, 4),), generator=rng))
        d = randint(rng, 1, 20)
        x, w = torch.randn(*lead, d, generator=rng) * 3, torch.randn(d, generator=rng)
        _compare_rms(fn, x, w, 1e-6, f"case {i}: x {tuple(x.shape)}, eps=1e-6")
    x, w = torch.randn(2, 5, generator=rng), torch.rand(5, generator=rng)
    _compare_rms(fn, x, w, 1e-6, "default eps (1e-6)", pass_eps=False)
    x = torch.zeros(2, 4)
    _compare_rms(fn, x, torch.ones(4), 1e-6, "an all-zero row: the output is 0, not NaN")
    for dtype in (torch.float16, torch.bfloat16):
        x = (torch.randn(3, 64, generator=rng) * 400).to(dtype)
        w = (torch.rand(64, generator=rng) + 0.5).to(dtype)
        _compare_rms(fn, x, w, 1e-6, f"{dtype} x with entries in the hundreds: x² overflows float16 "
                                     "(max 65504) - compute in float32, return x's dtype", atol=2e-2)


def _build(cls, case, d, momentum=0.1):
    module = call_learner(case, cls, d, eps=1e-5, momentum=momentum)
    expect(isinstance(module, nn.Module), f"[{case}] MaskedBatchNorm(...) should be an nn.Module")
    for name, value in (("weight", 1.0), ("bias", 0.0)):
        p = getattr(module, name, None)
        expect(isinstance(p, nn.Parameter) and tuple(p.shape) == (d,),
               f"[{case}] `{name}` should be an nn.Parameter of shape ({d},)")
    for name, value in (("running_mean", 0.0), ("running_var", 1.0)):
        b = getattr(module, name, None)
        expect(isinstance(b, torch.Tensor) and tuple(b.shape) == (d,) and torch.allclose(b.float(), torch.full((d,), value)),
               f"[{case}] `{name}` should be a buffer of shape ({d},) starting at {value}")
    return module


def _batch(rng, B, T, d, all_real_row=True):
    x = torch.randn(B, T, d, generator=rng) * 2 + 1
    lengths = torch.randint(1, T + 1, (B,), generator=rng)
    if all_real_row:
        lengths[0] = T
    mask = (torch.arange(T)[None, :] < lengths[:, None]).long()
    x = x.masked_fill(mask[..., None] == 0, 50.0)          # padding far away: if it leaks, it shows
    return x, mask


def _reference_output(bn, x, mask):
    out = torch.zeros_like(x)
    real = mask.bool()
    out[real] = bn(x[real])
    return out


def _randomize_affine(module, reference, rng, d):
    with torch.no_grad():
        w, b = torch.rand(d, generator=rng) + 0.5, torch.randn(d, generator=rng)
        module.weight.copy_(w)
        module.bias.copy_(b)
        reference.weight.copy_(w)
        reference.bias.copy_(b)


@exercise("07.masked-bn-train", points=2, uses="MaskedBatchNorm", forbids=BATCH_NORM)
def check_train(cls, rng):
    """Training mode: each feature normalised with the mean and biased variance of the real tokens only."""
    for i in range(5):
        B, T = randint(rng, 1, 6), randint(rng, 2, 7)
        d = randint(rng, 1, 10)
        if i == 0:
            B, T, d = 3, 6, 4
        x, mask = _batch(rng, B, T, d)
        if i == 0:
            mask[1:, 3:] = 0
            x = x.masked_fill(mask[..., None] == 0, 50.0)
        case = (f"case {i}: x ({B}, {T}, {d}), {int(mask.sum())} real tokens, padding holding 50.0"
                + (": statistics over the real tokens only; padding outputs 0" if i == 0 else ""))
        module = _build(cls, case, d)
        reference = nn.BatchNorm1d(d, eps=1e-5, momentum=0.1).train()
        _randomize_affine(module, reference, rng, d)
        got = call_learner(case, module, x, mask)
        expect_close(case, got, _reference_output(reference, x, mask).detach(), atol=1e-4)
    d = 3
    x = torch.randn(2, 4, d, generator=rng)
    case = "attention_mask=None: every token is real"
    module = _build(cls, case, d)
    reference = nn.BatchNorm1d(d).train()
    expect_close(case, call_learner(case, module, x), reference(x.reshape(-1, d)).reshape(x.shape).detach(), atol=1e-4)


@exercise("07.masked-bn-running", points=2, uses="MaskedBatchNorm", forbids=BATCH_NORM)
def check_running(cls, rng):
    """Running statistics (momentum, unbiased variance, real tokens only), then eval mode uses them."""
    for trial, momentum in enumerate((0.1, 0.3)):
        d = randint(rng, 2, 8)
        case = f"trial {trial}: d={d}, momentum={momentum}, 3 training batches with padding"
        module = _build(cls, case, d, momentum)
        reference = nn.BatchNorm1d(d, eps=1e-5, momentum=momentum).train()
        call_learner(case, module.train)
        for step in range(3):
            B, T = (int(n) for n in torch.randint(2, 6, (2,), generator=rng))
            x, mask = _batch(rng, B, T, d)
            call_learner(case, module, x, mask)
            _reference_output(reference, x, mask)
        what = "running_var: the unbiased variance (n / (n - 1)) of the real tokens, new = (1 - momentum)·old + momentum·batch"
        expect_close(f"{case}: running_mean (new = (1 - momentum)·old + momentum·batch mean)",
                     module.running_mean, reference.running_mean, atol=1e-4, name="running_mean")
        expect_close(f"{case}: {what}", module.running_var, reference.running_var, atol=1e-4, name="running_var")
        call_learner(case, module.eval)
        reference.eval()
        x, mask = _batch(rng, 2, 5, d)
        case_eval = f"{case}, then eval(): normalise with the running statistics, and leave them unchanged"
        with torch.no_grad():
            got = call_learner(case_eval, module, x, mask)
            expected = _reference_output(reference, x, mask)
        expect_close(case_eval, got, expected, atol=1e-4)
        expect_close(case_eval, module.running_mean, reference.running_mean, atol=1e-6, name="running_mean after eval")
