"""Graded checks for lesson 24 (how does distillation work, and why the temperature?): the lesson's
soft-target loss taken to DistilBERT's tokens; the soft term's pull against the hard labels measured
as T grows, with and without T² (predicted first); and the answer to "why T²" applied to a training
script that has no T² factor.

The references are written here (float64), independently of course_lib. Feedback compares a wrong
result with the known wrong variants (no T², T on one side only, the KL the other way round, the
reduction) and says which one it matches."""
import functools

import torch
import torch.nn.functional as F

from ..grader.authoring import (CheckFailed, call_learner, exercise, expect, expect_number, expect_scalar,
                       randint, written)

FORBIDS = ("course_lib.distillation:soft_target_loss", "course_lib.distillation:distillation_loss")



def _near(got: float, want: float, rel: float = 1e-4) -> bool:
    return abs(got - want) <= rel * max(abs(want), 1e-12) + 1e-9


# ---------------------------------------------------------------- Task 1: per-token soft targets

def token_loss(student, teacher, mask, T, *, t_student=None, t_teacher=None, scale=None, reverse=False,
               class_mean=False, per_sequence=False, count_padding=False, cross_entropy=False, total=False):
    """The reference (keyword defaults) and its wrong variants, float64."""
    t_student = T if t_student is None else t_student
    t_teacher = T if t_teacher is None else t_teacher
    scale = T ** 2 if scale is None else scale
    log_s = (student.double() / t_student).log_softmax(-1)              # (B, L, V)
    log_t = (teacher.double() / t_teacher).log_softmax(-1)
    if reverse:
        log_s, log_t = log_t, log_s
    per_token = (log_t.exp() * ((0 if cross_entropy else log_t) - log_s))
    per_token = per_token.mean(-1) if class_mean else per_token.sum(-1)   # (B, L)
    weight = torch.ones_like(mask, dtype=torch.float64) if count_padding else mask.double()
    if per_sequence:
        return scale * ((per_token * weight).sum(1) / weight.sum(1)).mean()
    if total:
        return scale * (per_token * weight).sum()
    return scale * (per_token * weight).sum() / weight.sum()


def _token_case(rng, T, layout):
    B, L, V = randint(rng, 2, 6), randint(rng, 3, 10), randint(rng, 3, 41)
    lengths = torch.randint(1, L + 1, (B,), generator=rng)
    lengths[0] = L                                               # one full row, the others padded
    lengths[1] = max(1, L // 2)                                  # and one clearly padded
    mask = (torch.arange(L)[None] < lengths[:, None]).long()     # (B, L), 1 = real token
    if layout == "left":
        mask = mask.flip(1)
    sharpness = torch.rand(B, 1, 1, generator=rng) * 3 + 0.5     # rows of different sharpness
    student = sharpness * torch.randn(B, L, V, generator=rng)
    teacher = sharpness * torch.randn(B, L, V, generator=rng)
    student[mask == 0] = 20 * torch.randn(int((mask == 0).sum()), V, generator=rng)   # padding: far off
    return student, teacher, mask


TOKEN_SPECS = [(2.0, "right"), (0.5, "left"), (4.0, "left"), (8.0, "right"), (3.0, "right"), (1.0, "left")]


def _token_name(case, student, mask, T, layout):
    return (f"case {case}: logits {tuple(student.shape)}, temperature {T:g}, real tokens per row "
            f"{mask.sum(1).tolist()}{' (left padding)' if layout == 'left' else ''}")


@exercise("24.token-distillation", points=2, uses="token_distillation_loss", forbids=FORBIDS)
def check_token_distillation(fn, rng):
    """The soft-target loss per real token of a padded batch (DistilBERT's MLM distillation).

    With its temperature and T² factor, averaged over the real tokens; the KL or the cross-entropy form."""
    for case, (T, layout) in enumerate(TOKEN_SPECS):
        student, teacher, mask = _token_case(rng, T, layout)
        name = _token_name(case, student, mask, T, layout)
        got = expect_number(name, call_learner(name, fn, student.clone(), teacher.clone(), mask.clone(), T),
                      "token_distillation_loss")
        kl = token_loss(student, teacher, mask, T).item()
        ce = token_loss(student, teacher, mask, T, cross_entropy=True).item()
        if _near(got, kl) or _near(got, ce):
            continue
        B, L, V = student.shape
        slips = [
            (dict(count_padding=True), "the padded positions were counted: average over the real tokens only "
                                       "(attention_mask == 1)"),
            (dict(scale=1.0), f"the T² = {T ** 2:g} factor is missing: without it the soft term's gradient "
                              f"shrinks as T grows"),
            (dict(scale=T), f"the loss is scaled by T = {T:g} once; the soft term's gradient shrinks as 1/T², so "
                            f"the factor is T²"),
            (dict(t_teacher=1.0), "the temperature divides the student's logits only: soften the teacher's too - "
                                  "both distributions at the same T"),
            (dict(t_student=1.0), "the temperature divides the teacher's logits only: the student's must be "
                                  "divided by T as well (and is used at T = 1 only after training)"),
            (dict(reverse=True), "this is KL(p_student || p_teacher): the teacher's distribution is the target, "
                                 "KL(p_teacher || p_student)"),
            (dict(class_mean=True), f"you also averaged over the V = {V} classes (F.kl_div's reduction='mean'): "
                                    f"sum over the classes, average over the tokens"),
            (dict(per_sequence=True), "you averaged per sequence, then over sequences: average over all real "
                                      "tokens of the batch, so a long sequence counts more than a short one"),
            (dict(total=True), "the sum over the real tokens: average over them instead"),
        ]
        for kwargs, message in slips:
            for form in (False, True):
                other = token_loss(student, teacher, mask, T, cross_entropy=form, **kwargs).item()
                if _near(got, other) and not _near(other, kl) and not _near(other, ce):
                    raise CheckFailed(f"[{name}] got {got:.5f}, expected {kl:.5f}: {message}")
        raise CheckFailed(f"[{name}] got {got:.5f}, expected {kl:.5f} (KL form; {ce:.5f} in the cross-entropy "
                          f"form); it matches none of the usual slips (padding counted, no T², T on one side, "
                          f"KL reversed, mean over classes)")
    return None


@exercise("24.fixed-teacher", points=1, uses="token_distillation_loss", forbids=FORBIDS)
def check_fixed_teacher(fn, rng):
    """The teacher gets no gradient; the loss is a 0-d tensor connected to the student's logits."""
    for case, (T, layout) in enumerate(TOKEN_SPECS[:3]):
        student, teacher, mask = _token_case(rng, T, layout)
        name = _token_name(case, student, mask, T, layout) + ", teacher logits that require grad"
        s_leaf = student.clone().requires_grad_(True)
        t_leaf = teacher.clone().requires_grad_(True)            # a teacher still being trained, or shared
        got = expect_scalar(name, call_learner(name, fn, s_leaf, t_leaf, mask.clone(), T), "token_distillation_loss")
        expect(got.requires_grad, f"[{name}] the loss is not connected to the student's logits (no gradient "
                                  f"can flow back: did you call .item(), or compute it under torch.no_grad()?)")
        got.backward()
        expect(s_leaf.grad is not None, f"[{name}] no gradient reached the student's logits")
        if t_leaf.grad is not None and t_leaf.grad.abs().max() > 0:
            raise CheckFailed(f"[{name}] the teacher received a gradient (max {t_leaf.grad.abs().max().item():.2e}): "
                              f"detach the teacher's logits - it is a fixed target; in a shared or still-training "
                              f"teacher this loss would pull the teacher towards the student")


# ---------------------------------------------------------------- Task 2: the soft term's pull

def gradient_ratio(s, t, y, T, alpha, t2, *, use_alpha=True, scale=None, class_mean=False, soft_sum=False,
                   hard_sum=False, hard_at_T=False, wrt_scaled=False, reverse=False, t_student=None,
                   t_teacher=None, values=False):
    """‖∂(α·soft)/∂s‖ / ‖∂((1-α)·CE)/∂s‖ in float64 (keyword defaults), and its wrong variants
    (`values`: the ratio of the two terms' loss values instead of their gradients)."""
    s = s.double().clone().requires_grad_(True)
    t = t.double()
    B, C = s.shape
    ts = T if t_student is None else t_student
    tt = T if t_teacher is None else t_teacher
    log_s, log_t = (s / ts).log_softmax(-1), (t / tt).log_softmax(-1)
    if reverse:
        kl = (log_s.exp() * (log_s - log_t)).sum(-1)
    else:
        kl = (log_t.exp() * (log_t - log_s)).sum(-1)
    kl = kl / C if class_mean else kl
    soft = kl.sum() if soft_sum else kl.mean()
    soft = soft * ((T ** 2 if t2 else 1.0) if scale is None else scale)
    hard = F.cross_entropy(s / T if hard_at_T else s, y, reduction="sum" if hard_sum else "mean")
    if values:
        a, b = (alpha, 1 - alpha) if use_alpha else (1.0, 1.0)
        return (a * soft / (b * hard)).item()
    (g_soft,) = torch.autograd.grad(soft, s)
    (g_hard,) = torch.autograd.grad(hard, s)
    if wrt_scaled:
        g_soft = g_soft * T
    a, b = (alpha, 1 - alpha) if use_alpha else (1.0, 1.0)
    return (a * g_soft.norm() / (b * g_hard.norm())).item()


RATIO_SPECS = [(4.0, 0.9, False), (2.0, 0.7, True), (8.0, 0.3, False), (0.5, 0.8, True), (3.0, 0.95, True),
               (8.0, 0.6, False), (1.0, 0.5, True)]


def lesson_like(seed: int = 24):
    """The prediction's setting: 4 classes, teacher logits of sd 1, a freshly initialised student's
    near 0 (sd 0.16, as the lesson's), noisy labels, 300 rows."""
    g = torch.Generator().manual_seed(seed)
    B, C = 300, 4
    teacher = torch.randn(B, C, generator=g)
    student = 0.16 * torch.randn(B, C, generator=g)
    labels = torch.randint(0, C, (B,), generator=g)
    return student, teacher, labels


@functools.lru_cache(maxsize=1)
def reference_falls():
    return _falls(gradient_ratio)


def _falls(ratio):
    """(fall from T = 2 to T = 8 without T², with T²) of a ratio function on the lesson-like case."""
    s, t, y = lesson_like()
    return tuple(ratio(s, t, y, 2.0, 0.9, t2) / ratio(s, t, y, 8.0, 0.9, t2) for t2 in (False, True))


@exercise("24.gradient-ratio", points=2, uses="soft_hard_gradient_ratio", forbids=FORBIDS)
def check_gradient_ratio(fn, rng):
    """‖∂(α·soft)/∂s‖ / ‖∂((1-α)·CE)/∂s‖ for any T and α, with and without T², on random logits."""
    for case, (T, alpha, t2) in enumerate(RATIO_SPECS):
        B, C = randint(rng, 2, 65), randint(rng, 3, 21)
        s = torch.randn(B, C, generator=rng) * (torch.rand(1, generator=rng).item() * 2 + 0.2)
        t = torch.randn(B, C, generator=rng) * (torch.rand(1, generator=rng).item() * 3 + 0.5)
        y = torch.randint(0, C, (B,), generator=rng)
        name = (f"case {case}: logits {(B, C)}, temperature {T:g}, alpha {alpha:g}, "
                f"{'with' if t2 else 'without'} T²")
        got = expect_number(name, call_learner(name, fn, s.clone(), t.clone(), y.clone(), T, alpha, t2),
                      "soft_hard_gradient_ratio")
        want = gradient_ratio(s, t, y, T, alpha, t2)
        if _near(got, want):
            continue
        slips = [
            (dict(use_alpha=False), f"the weights α = {alpha:g} and 1 - α are missing: the ratio compares the two "
                                    f"terms as the loss weighs them"),
            (dict(scale=T ** 2 if not t2 else 1.0), "the T² factor is " + (
                "applied although scale_by_t2 is False" if not t2 else "missing although scale_by_t2 is True")),
            (dict(scale=T if t2 else None), "the soft term is scaled by T once: the factor is T²"),
            (dict(class_mean=True), f"the KL is averaged over the C = {C} classes (F.kl_div's reduction='mean'): "
                                    f"sum over the classes, average over the rows, as the cross-entropy does"),
            (dict(soft_sum=True), f"the soft term is summed over the B = {B} rows but the cross-entropy averaged: "
                                  f"average both"),
            (dict(hard_sum=True), f"the cross-entropy is summed over the B = {B} rows but the soft term averaged: "
                                  f"average both"),
            (dict(hard_at_T=True), "the hard-label term divides the logits by T: it uses them at T = 1"),
            (dict(wrt_scaled=True), "this is the gradient with respect to s / T: take it with respect to the "
                                    "student's logits s, where one 1/T comes from the division"),
            (dict(reverse=True), "the KL is the wrong way round: KL(p_teacher || p_student), the teacher's "
                                 "distribution is the target"),
            (dict(t_teacher=1.0), "only the student's logits are divided by T: soften the teacher's too"),
            (dict(t_student=1.0), "only the teacher's logits are divided by T: the student's too"),
            (dict(values=True), "this is the ratio of the two terms' loss values: the pull on the logits is the "
                                "gradient, and the two losses' values scale differently from their gradients"),
        ]
        for kwargs, message in slips:
            other = gradient_ratio(s, t, y, T, alpha, t2, **kwargs)
            if _near(got, other) and not _near(other, want):
                raise CheckFailed(f"[{name}] got {got:.6g}, expected {want:.6g}: {message}")
        if _near(got, 1 / want):
            raise CheckFailed(f"[{name}] got {got:.6g}, expected {want:.6g}: that is hard / soft, the inverse")
        raise CheckFailed(f"[{name}] got {got:.6g}, expected {want:.6g}: it matches none of the usual slips "
                          f"(α left out, T² where it should not be, a reduction over classes or a sum over rows, "
                          f"the hard term at T, the gradient with respect to s / T, a ratio of loss values)")
    call = lambda s, t, y, T, a, t2: expect_number("the lesson-like case", call_learner(  # noqa: E731
        "the lesson-like case", fn, s.clone(), t.clone(), y.clone(), T, a, t2), "soft_hard_gradient_ratio")
    without, with_t2 = _falls(call)
    return (f"on the lesson-like case (4 classes, teacher logits of sd 1, α = 0.9) your ratio falls "
            f"{without:.1f}x from T = 2 to T = 8 without T², {with_t2:.2f}x with it")


FALL_WITHOUT, FALL_WITH = (12.0, 20.0), (0.8, 1.25)      # around the high-T limit's 16 and 1


@exercise("24.predict-fall", points=1, uses=("predicted_fall_without_t2", "predicted_fall_with_t2"))
def check_predict_fall(without, with_t2, rng=None):
    """The predicted fall of the soft/hard gradient ratio from T = 2 to T = 8, without and with T².

    Graded: it follows from how the soft gradient depends on T."""
    case = "your prediction"
    without = expect_number(case, without, "predicted_fall_without_t2")
    with_t2 = expect_number(case, with_t2, "predicted_fall_with_t2")
    measured = reference_falls()
    beside = (f"you predicted {without:g} and {with_t2:g}; the measurement on the lesson-like case gives "
              f"{measured[0]:.1f} and {measured[1]:.2f}")
    if not FALL_WITHOUT[0] <= without <= FALL_WITHOUT[1]:
        if 3 <= without <= 5:
            why = ("4 = 8/2 counts one 1/T; the soft gradient (p_s - p_t) / (T·B) has two: the division of the "
                   "logits, and p_s - p_t itself, which flattens as 1/T once T is large")
        elif without >= 40:
            why = "from T = 2 to T = 8 the factor is (8/2)^k for a gradient that falls as 1/T^k"
        elif without <= 1.5:
            why = "without T² the soft term's gradient does shrink as T grows, and the hard term does not change"
        else:
            why = "the soft gradient falls as a power of 1/T once T is large: which power?"
        raise CheckFailed(f"[{case}] without T²: {beside} - {why}")
    if not FALL_WITH[0] <= with_t2 <= FALL_WITH[1]:
        why = ("T² multiplies the soft term by exactly what its gradient loses, so the ratio stays about level"
               if with_t2 > 1.25 else "with T², the soft term keeps its weight: the ratio does not grow either")
        raise CheckFailed(f"[{case}] with T²: {beside} - {why}")
    return beside + " (1/T² is the high-temperature limit, not an exact law)"


# ---------------------------------------------------------------- Task 3: a script without T²

def matched(alpha, T):
    """(α', SGD learning-rate factor) that make α'·KL + (1-α')·CE move like α·T²·KL + (1-α)·CE."""
    k = alpha * T ** 2 + 1 - alpha
    return alpha * T ** 2 / k, k


def _gradients(alpha_soft, alpha_hard, s, t, y, T):
    s = s.double().clone().requires_grad_(True)
    kl = ((t.double() / T).softmax(-1) * ((t.double() / T).log_softmax(-1) - (s / T).log_softmax(-1))).sum(-1).mean()
    loss = alpha_soft * kl + alpha_hard * F.cross_entropy(s, y)
    (g,) = torch.autograd.grad(loss, s)
    return g


@exercise("24.match-without-t2", points=2, uses="match_without_t2", forbids=FORBIDS)
def check_match(fn, rng):
    """(α', lr factor): a loss without T² that gives the same SGD updates as the lesson's loss with T²."""
    specs = [(0.9, 8.0), (0.5, 2.0), (0.3, 4.0), (0.7, 0.5), (0.99, 3.0), (0.1, 6.0), (0.6, 1.5)]
    for case, (alpha, T) in enumerate(specs):
        name = f"case {case}: alpha {alpha:g}, temperature {T:g}"
        got = call_learner(name, fn, alpha, T)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise CheckFailed(f"[{name}] return a tuple (alpha_prime, lr_factor), got {type(got).__name__}")
        a, k = (expect_number(name, v, n) for v, n in zip(got, ("alpha_prime", "lr_factor")))
        want_a, want_k = matched(alpha, T)
        if not 0 < a < 1:
            extra = (f" ({a:g} = α·T²: divide by the sum of both weights, α·T² + 1 - α)"
                     if _near(a, alpha * T ** 2) else "")
            raise CheckFailed(f"[{name}] alpha_prime = {a:g}: the script computes α'·KL + (1 - α')·CE, so α' is a "
                              f"weight in (0, 1){extra}")
        if not _near(a, want_a, 1e-5):
            g = torch.Generator().manual_seed(case)
            s, t = torch.randn(16, 5, generator=g), 2 * torch.randn(16, 5, generator=g)
            y = torch.randint(0, 5, (16,), generator=g)
            target = _gradients(alpha * T ** 2, 1 - alpha, s, t, y, T)
            yours = _gradients(a, 1 - a, s, t, y, T)
            cos = F.cosine_similarity(target.flatten(), yours.flatten(), dim=0).item()
            slips = [(alpha, "α' = α leaves the soft term's pull T² times too weak: the script has no T²"),
                     (alpha / T ** 2 / (alpha / T ** 2 + 1 - alpha), "this divides by T² where the script lacks a "
                      "factor T²: the soft term must be made stronger, not weaker"),
                     (alpha * T / (alpha * T + 1 - alpha), "this makes up for one factor T; the soft term's gradient "
                      "without T² falls as 1/T², so it lacks T²")]
            why = next((m for v, m in slips if _near(a, v, 1e-5)),
                       "the soft and hard weights must stand in the ratio α·T² : (1 - α)")
            raise CheckFailed(f"[{name}] alpha_prime = {a:.6g}, expected {want_a:.6g}: your loss's gradient points "
                              f"another way (cosine {cos:.4f} to the lesson's loss's, on random logits) - {why}")
        if not _near(k, want_k, 1e-5):
            slips = [(1.0, "alpha_prime is right, but the script's loss is then smaller than the lesson's by a "
                           "constant factor, and plain SGD's steps with it (AdamW would divide it out)"),
                     (1 / want_k, "this is the inverse: the script's loss is the smaller one, so its learning rate "
                                  "must be larger"),
                     (T ** 2, "T² would be right if the whole loss were the soft term; the (1 - α) hard term is not "
                              "scaled")]
            why = next((m for v, m in slips if _near(k, v, 1e-5)),
                       "the lesson's loss is a constant multiple of the script's: which constant?")
            raise CheckFailed(f"[{name}] lr_factor = {k:.6g}, expected {want_k:.6g}: {why}")
    a, k = matched(0.9, 8.0)
    return f"at α = 0.9, T = 8 the script needs α' = {a:.4f} and a learning rate {k:.1f}x as large under plain SGD"


# ---------------------------------------------------------------- the question, in words

written("24.written", points=2, rubric=(
    "The student is trained to match the teacher's output distribution softened by a temperature T on both "
    "sides (KL(p_teacher || p_student) at T, times T²), usually mixed with cross-entropy on the hard labels "
    "(weight α); the student is used at T = 1 afterwards.",
    "T > 1 flattens the teacher's distribution so its ranking of the wrong classes ('dark knowledge') carries "
    "signal; standard recipes use one fixed T (e.g. 2), not a schedule.",
    "Why T²: without it the soft term's gradient shrinks with T (as 1/T² only in the high-T limit), so it would "
    "lose its weight against the hard term (α = 0.9, T = 8: about 0.09 of it); with AdamW a constant factor on "
    "the whole loss nearly cancels - the factor matters through the mix.",
    "The gain comes from what the teacher learned (it saw ~17× more data): here mostly denoised labels (its "
    "argmax alone recovers most of it), little dark knowledge with 4 classes; initialising from every other "
    "teacher layer (DistilBERT) is a further head start.",
))
