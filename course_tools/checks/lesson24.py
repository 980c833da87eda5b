"""Graded checks for lesson 24: knowledge distillation (soft targets, temperature, the T² factor)."""
import torch
import torch.nn.functional as F

from course_lib.distillation import distillation_loss as reference_distillation
from course_lib.distillation import soft_target_loss as reference_soft
from ..grading import CheckFailed, exercise, expect, expect_close, expect_tensor

TEMPERATURES = (0.5, 1.0, 2.0, 3.0, 4.0, 8.0)


def _case(rng, case):
    """Random student and teacher logits (B, C) of different scales, a temperature, labels."""
    B = int(torch.randint(2, 9, (1,), generator=rng))
    C = int(torch.randint(3, 12, (1,), generator=rng))
    scale = float(torch.rand(1, generator=rng)) * 4 + 1
    student = scale * torch.randn(B, C, generator=rng)
    teacher = scale * torch.randn(B, C, generator=rng)
    T = TEMPERATURES[case % len(TEMPERATURES)]
    labels = torch.randint(0, C, (B,), generator=rng)
    return student, teacher, T, labels


def _scalar(case, got, name):
    got = expect_tensor(case, got, name)
    if got.dim() != 0:
        raise CheckFailed(f"[{case}] {name} should be a single number, a 0-d tensor, got shape "
                          f"{tuple(got.shape)} (sum over classes, then average over the rows)")
    return got


def _diagnose_soft(name, value, student, teacher, T):
    """Name the usual mistakes when the soft loss is off."""
    B, C = student.shape
    expected = reference_soft(student, teacher, T)
    p_t = torch.softmax(teacher / T, -1)
    entropy = -(p_t * torch.log_softmax(teacher / T, -1)).sum(-1).mean()
    near = lambda x: torch.allclose(value, x.to(value.dtype), atol=1e-4, rtol=1e-4)  # noqa: E731
    if torch.allclose(expected, torch.zeros(()), atol=1e-4):
        return
    if T != 1 and near(expected / T ** 2):
        raise CheckFailed(f"[{name}] your loss is the reference divided by T² = {T ** 2:g}: multiply "
                          f"by T² so the soft term's gradient keeps its size when T changes")
    if near(expected / C):
        raise CheckFailed(f"[{name}] your loss is the reference divided by C = {C}: F.kl_div's "
                          f"reduction='mean' averages over classes too; use reduction='batchmean'")
    if near(expected + T ** 2 * entropy):
        raise CheckFailed(f"[{name}] you computed the cross-entropy H(p_t, p_s), which is the KL "
                          f"divergence plus the teacher's entropy ({(T ** 2 * entropy).item():.4f} "
                          f"after T²); the task asks for the KL divergence (0 when they match)")
    if near(reference_soft(teacher, student, T)):
        raise CheckFailed(f"[{name}] you computed KL(p_s || p_t); the teacher's distribution is "
                          f"the target: KL(p_t || p_s) = sum p_t (log p_t - log p_s)")
    for who, s, t in (("teacher", student / T, teacher), ("student", student, teacher / T)):
        if near(T ** 2 * F.kl_div(F.log_softmax(s, -1), F.log_softmax(t, -1), reduction="batchmean",
                                  log_target=True)):
            raise CheckFailed(f"[{name}] the {who}'s logits were not divided by T = {T:g}: soften "
                              f"both distributions with the same temperature")


@exercise("24.soft-target-loss", points=3, uses="soft_target_loss")
def check_soft_target_loss(soft_target_loss, rng):
    """T² · KL(softmax(t/T) || softmax(s/T)) averaged over rows; value and gradient."""
    for case in range(8):
        student, teacher, T, _ = _case(rng, case)
        name = f"case {case}: logits {tuple(student.shape)}, temperature {T:g}"
        leaf = student.clone().requires_grad_(True)
        got = _scalar(name, soft_target_loss(leaf, teacher.clone(), T), "soft_target_loss")
        value = got.detach().to(torch.float32)
        expected = reference_soft(student, teacher, T)
        if not torch.allclose(value, expected, atol=1e-4, rtol=1e-4):
            _diagnose_soft(name, value, student, teacher, T)
        expect_close(name, value, expected, atol=1e-4, rtol=1e-4, name="soft_target_loss")
        if not got.requires_grad:
            raise CheckFailed(f"[{name}] the loss does not depend on the student's logits through "
                              f"autograd (no grad_fn); compute it with torch operations")
        got.backward()
        expect(leaf.grad is not None, f"[{name}] no gradient reached the student's logits")
        B = student.shape[0]
        grad = T * (torch.softmax(student / T, -1) - torch.softmax(teacher / T, -1)) / B
        expect_close(name, leaf.grad, grad, atol=1e-5, rtol=1e-4,
                     name="gradient w.r.t. the student's logits (T · (p_s - p_t) / B)")
    same = 3 * torch.randn(4, 5, generator=rng)
    got = _scalar("student = teacher", soft_target_loss(same.clone(), same.clone(), 2.0),
                  "soft_target_loss")
    expect(abs(got.item()) < 1e-5, f"[student = teacher] the loss should be 0 when the student "
           f"matches the teacher, got {got.item():.5f}")


@exercise("24.distillation-loss", points=2, uses="distillation_loss")
def check_distillation_loss(distillation_loss, rng):
    """alpha · soft (with T²) + (1 - alpha) · cross-entropy with the hard labels at T = 1."""
    for case in range(6):
        student, teacher, T, labels = _case(rng, case + 1)
        alpha = (0.0, 1.0, 0.9, 0.5, 0.25, 0.7)[case]
        name = f"case {case}: logits {tuple(student.shape)}, temperature {T:g}, alpha {alpha:g}"
        leaf = student.clone().requires_grad_(True)
        got = _scalar(name, distillation_loss(leaf, teacher.clone(), labels.clone(), T, alpha),
                      "distillation_loss")
        value = got.detach().to(torch.float32)
        expected = reference_distillation(student, teacher, labels, T, alpha)
        soft, hard = reference_soft(student, teacher, T), F.cross_entropy(student, labels)
        near = lambda x: torch.allclose(value, x, atol=1e-4, rtol=1e-4)  # noqa: E731
        if not near(expected):
            if alpha not in (0.5,) and near((1 - alpha) * soft + alpha * hard):
                raise CheckFailed(f"[{name}] alpha weights the soft (teacher) term, 1 - alpha the "
                                  f"hard labels; you swapped them")
            if T != 1 and near(alpha * soft + (1 - alpha) * F.cross_entropy(student / T, labels)):
                raise CheckFailed(f"[{name}] the hard-label cross-entropy is taken at T = 1 (the "
                                  f"student's plain logits), not at temperature T")
            if T != 1 and near(alpha * soft / T ** 2 + (1 - alpha) * hard):
                raise CheckFailed(f"[{name}] the soft term lacks the T² factor")
        expect_close(name, value, expected, atol=1e-4, rtol=1e-4, name="distillation_loss")
        expect(got.requires_grad, f"[{name}] the loss has no gradient: training calls backward() "
               f"on it, so do not detach it or convert it to a number")
        got.backward()
        leaf_ref = student.clone().requires_grad_(True)
        reference_distillation(leaf_ref, teacher, labels, T, alpha).backward()
        expect(leaf.grad is not None, f"[{name}] no gradient reached the student's logits")
        expect_close(name, leaf.grad, leaf_ref.grad, atol=1e-5, rtol=1e-4,
                     name="gradient w.r.t. the student's logits")
