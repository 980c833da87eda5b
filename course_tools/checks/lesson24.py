"""Graded checks for lesson 24: distillation where the lesson did not go - DistilBERT's token-level
soft-target loss over the real tokens of a padded batch, and its cosine loss on hidden states,
both with a teacher whose outputs still carry a graph (it must get no gradient).

The references are written here (float64), independently of course_lib."""
import torch

from ..grading import CheckFailed, exercise, expect, expect_close, expect_scalar, randint

FORBIDS = ("course_lib.distillation:soft_target_loss", "course_lib.distillation:distillation_loss",
           "torch.nn:CosineEmbeddingLoss", "torch.nn.functional:cosine_embedding_loss")


def reference_token(student, teacher, mask, T):
    real = mask.bool()
    if not real.any():
        return torch.zeros((), dtype=torch.float64)
    s = (student.double() / T).log_softmax(-1)[real]
    t = (teacher.double() / T).log_softmax(-1)[real]
    return T ** 2 * (t.exp() * (t - s)).sum(-1).mean()


def reference_cosine(student, teacher, mask):
    real = mask.bool()
    if not real.any():
        return torch.zeros((), dtype=torch.float64)
    s, t = student.double()[real], teacher.double()[real]
    cos = (s * t).sum(-1) / (s.norm(dim=-1) * t.norm(dim=-1)).clamp(min=1e-8)
    return (1 - cos).mean()


def _mask(rng, B, T, layout):
    lengths = torch.randint(1, T + 1, (B,), generator=rng)
    lengths[0] = T
    mask = (torch.arange(T)[None] < lengths[:, None]).long()
    if layout == "left":
        mask = mask.flip(1)
    if layout == "empty-row" and B > 1:
        mask[-1] = 0
    return mask


def _teacher_gradient(case, leaf):
    if leaf.grad is not None and leaf.grad.abs().max() > 0:
        raise CheckFailed(f"[{case}] the teacher received a gradient (max {leaf.grad.abs().max().item():.2e}): "
                          f"detach the teacher's outputs - the teacher is a fixed target, and in a shared "
                          f"or still-training teacher this loss would otherwise pull it towards the student")


def _padding_gradient(case, leaf, mask):
    leak = leaf.grad[mask == 0].abs() if leaf.grad is not None else torch.zeros(0)
    if leak.numel() and leak.max() > 0:
        raise CheckFailed(f"[{case}] padded positions of the student received a gradient (max "
                          f"{leak.max().item():.2e}): they must not count")


@exercise("24.token-distillation", points=3, uses="token_distillation_loss", forbids=FORBIDS)
def check_token_distillation(fn, rng):
    """T^2 * KL(p_t || p_s) per real token, averaged over the real tokens of the batch; teacher
    detached; padding neither counted nor given gradient; large logits; no real token -> 0."""
    specs = [(0.5, "right"), (2.0, "left"), (1.0, "right"), (4.0, "empty-row"), (3.0, "right"),
             (8.0, "left"), (2.0, "large")]
    for case, (T, layout) in enumerate(specs):
        B = randint(rng, 2, 5)
        L = randint(rng, 2, 9)
        V = randint(rng, 3, 40)
        mask = _mask(rng, B, L, "right" if layout == "large" else layout)
        rows = torch.rand(B, 1, generator=rng) * 3 + 0.5          # rows of different sharpness
        student = rows[..., None] * torch.randn(B, L, V, generator=rng)
        teacher = rows[..., None] * torch.randn(B, L, V, generator=rng)
        if layout == "large":
            student, teacher = student * 300, teacher * 300
        student[mask == 0] = 50 * torch.randn(int((mask == 0).sum()), V, generator=rng)
        name = (f"case {case}: logits {(B, L, V)}, temperature {T:g}, tokens per row "
                f"{mask.sum(1).tolist()}{' (left padding)' if layout == 'left' else ''}"
                f"{' (logits ~ +-1000)' if layout == 'large' else ''}")
        s_leaf = student.clone().requires_grad_(True)
        t_leaf = teacher.clone().requires_grad_(True)             # a teacher whose outputs carry a graph
        got = expect_scalar(name, fn(s_leaf, t_leaf, mask.clone(), T), "token_distillation_loss")
        value = got.detach().double()
        expected = reference_token(student, teacher, mask, T)
        if not torch.isfinite(value):
            raise CheckFailed(f"[{name}] the loss is {value.item()}, expected {expected.item():.5f}: a row "
                              f"of padding only, or exp() of large logits (use log_softmax)?")
        near = lambda x: abs(value.item() - float(x)) <= 1e-4 * max(1.0, abs(float(x)))  # noqa: E731
        if not near(expected):
            full = torch.ones_like(mask)
            hints = [(reference_token(student, teacher, full, T), "padded positions were counted: average over "
                      "the real tokens only (attention_mask == 1)"),
                     (expected / T ** 2, f"the loss lacks the T² = {T ** 2:g} factor"),
                     (reference_token(teacher, student, mask, T), "you computed KL(p_s || p_t); the teacher's "
                      "distribution is the target"),
                     (expected / V, f"you also averaged over the V = {V} classes (reduction='mean'): sum over "
                      f"classes, average over tokens")]
            real = mask.bool()
            per_row = torch.stack([reference_token(student[b:b + 1], teacher[b:b + 1], mask[b:b + 1], T)
                                   for b in range(B) if real[b].any()]).mean()
            hints.append((per_row, "you averaged per sequence, then over sequences: average over all real "
                          "tokens of the batch"))
            for other, message in hints:
                if T != 1 or "T²" not in message:
                    if near(other):
                        raise CheckFailed(f"[{name}] got {value.item():.5f}, expected {expected.item():.5f}: {message}")
        expect_close(name, value, expected, atol=1e-4, rtol=1e-4, name="token_distillation_loss")
        expect(got.requires_grad, f"[{name}] the loss is not connected to the student's logits")
        got.backward()
        expect(s_leaf.grad is not None, f"[{name}] no gradient reached the student's logits")
        _teacher_gradient(name, t_leaf)
        _padding_gradient(name, s_leaf, mask)


@exercise("24.cosine-loss", points=2, uses="cosine_alignment_loss", forbids=FORBIDS)
def check_cosine_loss(fn, rng):
    """mean over real tokens of 1 - cos(student, teacher); teacher detached; zero vectors safe."""
    for case, layout in enumerate(("right", "left", "empty-row", "zero-vector", "right", "left")):
        B = randint(rng, 2, 5)
        L = randint(rng, 2, 9)
        H = randint(rng, 2, 33)
        mask = _mask(rng, B, L, "right" if layout == "zero-vector" else layout)
        student = torch.randn(B, L, H, generator=rng) * (torch.rand(B, L, 1, generator=rng) * 5 + 0.1)
        teacher = student * 0.5 + torch.randn(B, L, H, generator=rng)
        student[mask == 0] = -teacher[mask == 0] * 7               # padding: maximally misaligned
        if layout == "zero-vector":
            student[0, 0] = 0.0                                    # a dead unit's output
        name = (f"case {case}: hidden states {(B, L, H)}, tokens per row {mask.sum(1).tolist()}"
                f"{' (left padding)' if layout == 'left' else ''}{' (a zero vector)' if layout == 'zero-vector' else ''}")
        s_leaf = student.clone().requires_grad_(True)
        t_leaf = teacher.clone().requires_grad_(True)
        got = expect_scalar(name, fn(s_leaf, t_leaf, mask.clone()), "cosine_alignment_loss")
        value = got.detach().double()
        expected = reference_cosine(student, teacher, mask)
        if not torch.isfinite(value):
            raise CheckFailed(f"[{name}] the loss is {value.item()}, expected {expected.item():.5f}: a zero "
                              f"vector (divide by max(|s| |t|, 1e-8)) or a row of padding only?")
        near = lambda x: abs(value.item() - float(x)) <= 1e-5 * max(1.0, abs(float(x)))  # noqa: E731
        if not near(expected):
            if near(reference_cosine(student, teacher, torch.ones_like(mask))):
                raise CheckFailed(f"[{name}] got {value.item():.5f}, expected {expected.item():.5f}: padded "
                                  f"positions were counted; average over the real tokens only")
            if near(1 - expected):
                raise CheckFailed(f"[{name}] got {value.item():.5f}, the mean cosine; the loss is 1 - cos "
                                  f"(0 when aligned), expected {expected.item():.5f}")
        expect_close(name, value, expected, atol=1e-5, rtol=1e-5, name="cosine_alignment_loss")
        expect(got.requires_grad, f"[{name}] the loss is not connected to the student's hidden states")
        got.backward()
        _teacher_gradient(name, t_leaf)
        _padding_gradient(name, s_leaf, mask)
