"""Exercise 24 (the soft-target loss per token; the soft term's pull as T grows, predicted then
measured; a training script without T²): wrong answers a learner writes from the task text, and
honest alternatives (other forms, conventions and styles)."""
from . import Honest, Mistake

_K = "def token_distillation_loss(student_logits, teacher_logits, attention_mask, temperature):\n"
_R = "def soft_hard_gradient_ratio(student_logits, teacher_logits, labels, temperature, alpha, scale_by_t2):\n"
_M = "def match_without_t2(alpha, temperature):\n"


def _kl(student="student_logits[real] / temperature", teacher="teacher_logits.detach()[real] / temperature",
        scale="temperature ** 2", reduce=".sum(-1).mean()", real="attention_mask.bool()"):
    return {0: "import torch\n" + _K + f"    real = {real}\n"
            f"    log_q = torch.log_softmax({student}, -1)\n"
            f"    log_p = torch.log_softmax({teacher}, -1)\n"
            f"    return {scale} * (log_p.exp() * (log_p - log_q)){reduce}\n"}


def _ratio(soft="(log_p.exp() * (log_p - log_q)).sum(-1).mean()", hard="F.cross_entropy(s, labels)",
           t2="temperature ** 2 * soft", weights=("alpha", "(1 - alpha)"), wrt="s"):
    return {2: "import torch\nimport torch.nn.functional as F\n" + _R +
            "    s = student_logits.detach().double().requires_grad_(True)\n"
            "    log_q = F.log_softmax(s / temperature, -1)\n"
            "    log_p = F.log_softmax(teacher_logits.double() / temperature, -1)\n"
            f"    soft = {soft}\n"
            f"    if scale_by_t2:\n        soft = {t2}\n"
            f"    hard = {hard}\n"
            f"    (g_soft,) = torch.autograd.grad({weights[0]} * soft, {wrt})\n"
            f"    (g_hard,) = torch.autograd.grad({weights[1]} * hard, s)\n"
            "    return (g_soft.norm() / g_hard.norm()).item()\n"}


def _predict(without, with_t2):
    return {1: f"predicted_fall_without_t2 = {without}\npredicted_fall_with_t2 = {with_t2}\n"}


def _match(body):
    return {3: _M + body}


MISTAKES = [
    # 24.token-distillation: the value
    Mistake("24.token-distillation", "padding-counted", _kl(real="torch.ones_like(attention_mask).bool()"),
            "padded positions were counted"),
    Mistake("24.token-distillation", "no-t-squared", _kl(scale="1.0"), "factor is missing"),
    Mistake("24.token-distillation", "scaled-by-t-once", _kl(scale="temperature"), "scaled by T"),
    Mistake("24.token-distillation", "temperature-on-student-only", _kl(teacher="teacher_logits.detach()[real]"),
            "student's logits only"),
    Mistake("24.token-distillation", "temperature-on-teacher-only", _kl(student="student_logits[real]"),
            "teacher's logits only"),
    Mistake("24.token-distillation", "kl-reversed", {0: "import torch\n" + _K +
            "    real = attention_mask.bool()\n"
            "    log_q = torch.log_softmax(student_logits[real] / temperature, -1)\n"
            "    log_p = torch.log_softmax(teacher_logits.detach()[real] / temperature, -1)\n"
            "    return temperature ** 2 * (log_q.exp() * (log_q - log_p)).sum(-1).mean()\n"}, "KL(p_student || p_teacher)"),
    Mistake("24.token-distillation", "kl-div-mean-reduction", {0: "import torch\nimport torch.nn.functional as F\n" + _K +
            "    real = attention_mask.bool()\n"
            "    log_q = F.log_softmax(student_logits[real] / temperature, -1)\n"
            "    p = F.softmax(teacher_logits.detach()[real] / temperature, -1)\n"
            "    return temperature ** 2 * F.kl_div(log_q, p, reduction='mean')\n"}, "classes"),
    Mistake("24.token-distillation", "mean-per-sequence", {0: "import torch\n" + _K +
            "    m = attention_mask.float()\n"
            "    log_q = torch.log_softmax(student_logits / temperature, -1)\n"
            "    log_p = torch.log_softmax(teacher_logits.detach() / temperature, -1)\n"
            "    kl = (log_p.exp() * (log_p - log_q)).sum(-1)\n"
            "    return temperature ** 2 * ((kl * m).sum(1) / m.sum(1)).mean()\n"}, "per sequence"),
    # 24.fixed-teacher: conformance
    Mistake("24.fixed-teacher", "teacher-not-detached", _kl(teacher="teacher_logits[real] / temperature"), "detach"),
    Mistake("24.fixed-teacher", "returns-a-float", {0: _kl()[0].replace(".sum(-1).mean()\n", ".sum(-1).mean().item()\n")},
            "torch.Tensor"),
    Mistake("24.fixed-teacher", "under-no-grad", {0: "import torch\n" + _K +
            "    with torch.no_grad():\n"
            "        real = attention_mask.bool()\n"
            "        log_q = torch.log_softmax(student_logits[real] / temperature, -1)\n"
            "        log_p = torch.log_softmax(teacher_logits[real] / temperature, -1)\n"
            "        return temperature ** 2 * (log_p.exp() * (log_p - log_q)).sum(-1).mean()\n"}, "not connected"),
    Mistake("24.fixed-teacher", "shape-one-not-scalar", {0: _kl()[0].replace(".sum(-1).mean()\n", ".sum(-1).mean().reshape(1)\n")},
            "0-d tensor"),
    # 24.gradient-ratio: the measurement
    Mistake("24.gradient-ratio", "alpha-left-out", _ratio(weights=("1.0", "1.0")), "weights α"),
    Mistake("24.gradient-ratio", "t2-always", {2: _ratio()[2].replace("    if scale_by_t2:\n        soft", "    if True:\n        soft")},
            "applied although scale_by_t2 is False"),
    Mistake("24.gradient-ratio", "kl-mean-over-classes", _ratio(soft="(log_p.exp() * (log_p - log_q)).mean()"),
            "averaged over the C"),
    Mistake("24.gradient-ratio", "hard-at-temperature", _ratio(hard="F.cross_entropy(s / temperature, labels)"),
            "hard-label term divides"),
    Mistake("24.gradient-ratio", "ratio-of-loss-values", {2: "import torch\nimport torch.nn.functional as F\n" + _R +
            "    log_q = F.log_softmax(student_logits / temperature, -1)\n"
            "    log_p = F.log_softmax(teacher_logits / temperature, -1)\n"
            "    soft = (log_p.exp() * (log_p - log_q)).sum(-1).mean()\n"
            "    if scale_by_t2:\n        soft = temperature ** 2 * soft\n"
            "    hard = F.cross_entropy(student_logits, labels)\n"
            "    return (alpha * soft / ((1 - alpha) * hard)).item()\n"}, "loss values"),
    Mistake("24.gradient-ratio", "gradient-wrt-scaled-logits", {2: "import torch\nimport torch.nn.functional as F\n" + _R +
            "    z = (student_logits.detach().double() / temperature).requires_grad_(True)\n"
            "    s = student_logits.detach().double().requires_grad_(True)\n"
            "    log_q = F.log_softmax(z, -1)\n"
            "    log_p = F.log_softmax(teacher_logits.double() / temperature, -1)\n"
            "    soft = (log_p.exp() * (log_p - log_q)).sum(-1).mean()\n"
            "    if scale_by_t2:\n        soft = temperature ** 2 * soft\n"
            "    (g_soft,) = torch.autograd.grad(alpha * soft, z)\n"
            "    (g_hard,) = torch.autograd.grad((1 - alpha) * F.cross_entropy(s, labels), s)\n"
            "    return (g_soft.norm() / g_hard.norm()).item()\n"}, "with respect to s / T"),
    # 24.predict-fall: the prediction
    Mistake("24.predict-fall", "one-over-t", _predict(4, 1), "4 = 8/2"),
    Mistake("24.predict-fall", "t2-cancels-nothing", _predict(16, 16), "with T²"),
    Mistake("24.predict-fall", "no-change", _predict(1, 1), "does shrink"),
    Mistake("24.predict-fall", "cubed", _predict(64, 1), "(8/2)^k"),
    # 24.match-without-t2: the answer applied
    Mistake("24.match-without-t2", "alpha-unchanged", _match("    return alpha, 1.0\n"), "T² times too weak"),
    Mistake("24.match-without-t2", "divides-by-t2", _match(
        "    a = alpha / temperature ** 2\n    return a / (a + 1 - alpha), 1.0\n"), "stronger, not weaker"),
    Mistake("24.match-without-t2", "unnormalised-weight", _match("    return alpha * temperature ** 2, 1.0\n"),
            "weight in (0, 1)"),
    Mistake("24.match-without-t2", "lr-left-alone", _match(
        "    a = alpha * temperature ** 2\n    return a / (a + 1 - alpha), 1.0\n"), "AdamW would divide"),
    Mistake("24.match-without-t2", "lr-inverted", _match(
        "    a = alpha * temperature ** 2\n    return a / (a + 1 - alpha), 1 / (a + 1 - alpha)\n"), "inverse"),
    Mistake("24.match-without-t2", "one-factor-t", _match(
        "    a = alpha * temperature\n    return a / (a + 1 - alpha), a + 1 - alpha\n"), "one factor T"),
]

HONEST = [
    Honest("cross-entropy-form-closed-form-gradient", {
        0: "import torch\nimport torch.nn.functional as F\n" + _K +
           "    w = attention_mask.to(student_logits.dtype)                    # (B, L)\n"
           "    with torch.no_grad():\n"
           "        p = F.softmax(teacher_logits / temperature, dim=-1)\n"
           "    ce = -(p * F.log_softmax(student_logits / temperature, dim=-1)).sum(-1)   # Hinton's H(p_t, p_s)\n"
           "    return temperature * temperature * (ce * w).sum() / w.sum()\n",
        1: "predicted_fall_without_t2 = 17.8   # the lesson's real logits: 1.656 / 0.093\n"
           "predicted_fall_with_t2 = 1.12\n",
        2: "import torch\n" + _R +
           "    B, C = student_logits.shape\n"
           "    T = temperature\n"
           "    g_soft = (torch.softmax(student_logits / T, -1) - torch.softmax(teacher_logits / T, -1)) / (T * B)\n"
           "    if scale_by_t2:\n        g_soft = g_soft * T ** 2\n"
           "    onehot = torch.nn.functional.one_hot(labels, C).to(student_logits.dtype)\n"
           "    g_hard = (torch.softmax(student_logits, -1) - onehot) / B\n"
           "    return float(alpha * torch.linalg.norm(g_soft) / ((1 - alpha) * torch.linalg.norm(g_hard)))\n",
        3: "import torch\n" + _M +
           "    t2 = torch.tensor(float(temperature)) ** 2\n"
           "    odds = alpha * t2 / (1 - alpha)            # soft : hard weight of the lesson's loss\n"
           "    return odds / (1 + odds), (1 - alpha) * (1 + odds)\n"}),
    Honest("kl-div-batchmean-reusing-task-1", {
        0: "import torch\nimport torch.nn.functional as F\n" + _K +
           "    keep = attention_mask > 0\n"
           "    student = F.log_softmax(student_logits / temperature, dim=-1)[keep]\n"
           "    target = F.log_softmax(teacher_logits.detach() / temperature, dim=-1)[keep]\n"
           "    kl = F.kl_div(student, target, reduction='batchmean', log_target=True)\n"
           "    return kl * temperature ** 2\n",
        1: "predicted_fall_without_t2 = 16\npredicted_fall_with_t2 = 1\n",
        2: "import torch\nimport torch.nn.functional as F\n" + _R +
           "    s = student_logits.clone().requires_grad_(True)\n"
           "    B = s.shape[0]\n"
           "    ones = torch.ones(B, 1, dtype=torch.long)\n"
           "    soft = token_distillation_loss(s[:, None], teacher_logits[:, None], ones, temperature)\n"
           "    if not scale_by_t2:\n        soft = soft / temperature ** 2\n"
           "    g_soft = torch.autograd.grad(alpha * soft, s)[0]\n"
           "    g_hard = torch.autograd.grad((1 - alpha) * F.cross_entropy(s, labels), s)[0]\n"
           "    return g_soft.norm().item() / g_hard.norm().item()\n",
        3: "from fractions import Fraction\n\n" + _M +
           "    a, t = Fraction(alpha), Fraction(temperature)\n"
           "    soft, hard = a * t * t, 1 - a\n"
           "    return float(soft / (soft + hard)), float(soft + hard)\n"}),
    Honest("masked-sum-where", {
        0: "import torch\n" + _K +
           "    m = attention_mask.bool()\n"
           "    log_q = (student_logits / temperature).log_softmax(-1)\n"
           "    log_p = (teacher_logits / temperature).log_softmax(-1).detach()\n"
           "    kl = torch.einsum('blv,blv->bl', log_p.exp(), log_p - log_q)\n"
           "    kl = torch.where(m, kl, torch.zeros_like(kl))\n"
           "    return temperature ** 2 * kl.sum() / m.sum()\n"}),
]
