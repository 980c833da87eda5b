"""Exercise 24 (DistilBERT's token-level and cosine losses): wrong answers, honest alternatives."""
from . import Honest, Mistake

_K = "def token_distillation_loss(student_logits, teacher_logits, attention_mask, temperature):\n"
_C = "def cosine_alignment_loss(student_hidden, teacher_hidden, attention_mask):\n"
_GUARD = "    real = attention_mask.bool()\n    if not real.any():\n        return student_logits.sum() * 0.0\n"


def _kl(teacher="teacher_logits.detach()", select="[real]", scale="temperature ** 2", reduce=".sum(-1).mean()"):
    return {0: "import torch\n" + _K + _GUARD +
            f"    log_q = torch.log_softmax(student_logits{select} / temperature, -1)\n"
            f"    log_p = torch.log_softmax({teacher}{select} / temperature, -1)\n"
            f"    return {scale} * (log_p.exp() * (log_p - log_q)){reduce}\n"}


_CG = "    real = attention_mask.bool()\n    if not real.any():\n        return student_hidden.sum() * 0.0\n"


def _cos(teacher="teacher_hidden.detach()", select="[real]", body="(1 - cos).mean()", eps="1e-8"):
    return {1: "import torch\n" + _C + _CG +
            f"    s, t = student_hidden{select}, {teacher}{select}\n"
            f"    cos = (s * t).sum(-1) / (s.norm(dim=-1) * t.norm(dim=-1)).clamp(min={eps})\n"
            f"    return {body}\n"}


MISTAKES = [
    Mistake("24.token-distillation", "teacher-not-detached", _kl(teacher="teacher_logits"), "detach"),
    Mistake("24.token-distillation", "padding-counted", _kl(select=""), "padded positions were counted"),
    Mistake("24.token-distillation", "no-t-squared", _kl(scale="1.0"), "T²"),
    Mistake("24.token-distillation", "kl-reversed", {0: "import torch\n" + _K + _GUARD +
            "    log_q = torch.log_softmax(student_logits[real] / temperature, -1)\n"
            "    log_p = torch.log_softmax(teacher_logits.detach()[real] / temperature, -1)\n"
            "    return temperature ** 2 * (log_q.exp() * (log_q - log_p)).sum(-1).mean()\n"}, "KL(p_s || p_t)"),
    Mistake("24.token-distillation", "kl-div-mean-reduction", {0: "import torch\nimport torch.nn.functional as F\n"
            + _K + _GUARD +
            "    log_q = F.log_softmax(student_logits[real] / temperature, -1)\n"
            "    p = F.softmax(teacher_logits.detach()[real] / temperature, -1)\n"
            "    return temperature ** 2 * F.kl_div(log_q, p, reduction='mean')\n"}, "classes"),
    Mistake("24.token-distillation", "naive-softmax-overflow", {0: "import torch\n" + _K + _GUARD +
            "    s = (student_logits[real] / temperature).exp()\n"
            "    t = (teacher_logits.detach()[real] / temperature).exp()\n"
            "    q, p = s / s.sum(-1, keepdim=True), t / t.sum(-1, keepdim=True)\n"
            "    return temperature ** 2 * (p * (p.log() - q.log())).sum(-1).mean()\n"}, "large logits"),
    Mistake("24.cosine-loss", "teacher-not-detached", _cos(teacher="teacher_hidden"), "detach"),
    Mistake("24.cosine-loss", "padding-counted", _cos(select=""), "padded positions were counted"),
    Mistake("24.cosine-loss", "returns-cosine", _cos(body="cos.mean()"), "1 - cos"),
    Mistake("24.cosine-loss", "zero-vector-nan", {1: "import torch\n" + _C + _CG +
            "    s, t = student_hidden[real], teacher_hidden.detach()[real]\n"
            "    cos = (s / s.norm(dim=-1, keepdim=True) * t / t.norm(dim=-1, keepdim=True)).sum(-1)\n"
            "    return (1 - cos).mean()\n"}, "zero"),
]

HONEST = [
    Honest("kl-div-batchmean-and-cosine-similarity", {
        0: "import torch\nimport torch.nn.functional as F\n" + _K +
           "    keep = attention_mask > 0\n"
           "    n = int(keep.sum())\n"
           "    with torch.no_grad():\n"
           "        target = F.log_softmax(teacher_logits / temperature, dim=-1)[keep]\n"
           "    student = F.log_softmax(student_logits / temperature, dim=-1)[keep]\n"
           "    if n == 0:\n        return (student_logits * 0).sum()\n"
           "    kl = F.kl_div(student, target, reduction='batchmean', log_target=True)\n"
           "    return kl * temperature * temperature\n",
        1: "import torch\nimport torch.nn.functional as F\n" + _C +
           "    w = attention_mask.to(student_hidden.dtype)\n"
           "    cos = F.cosine_similarity(student_hidden, teacher_hidden.detach(), dim=-1, eps=1e-8)\n"
           "    return ((1 - cos) * w).sum() / w.sum().clamp(min=1)\n"}),
    Honest("float64-weights", {
        0: "import torch\n" + _K +
           "    w = attention_mask.double()\n"
           "    log_q = (student_logits.double() / temperature).log_softmax(-1)\n"
           "    log_p = (teacher_logits.detach().double() / temperature).log_softmax(-1)\n"
           "    kl = (log_p.exp() * (log_p - log_q)).sum(-1)\n"
           "    kl = torch.where(w > 0, kl, torch.zeros_like(kl))\n"
           "    return (temperature ** 2 * kl.sum() / w.sum().clamp(min=1)).to(student_logits.dtype)\n",
        1: "import torch\n\ndef _unit(x):\n    return x / x.norm(dim=-1, keepdim=True).clamp(min=1e-4)\n\n" + _C +
           "    real = attention_mask.bool()\n"
           "    t = teacher_hidden.detach()\n"
           "    cos = (_unit(student_hidden) * _unit(t)).sum(-1)\n"
           "    losses = (1 - cos)[real]\n"
           "    return losses.mean() if losses.numel() else student_hidden.sum() * 0\n"}),
]
