"""Exercise 17 (label-smoothed pretraining loss): wrong answers a learner writes, honest alternatives."""
from . import Honest, Mistake

_DEF1 = "def smoothed_mlm_loss(prediction_logits, labels, smoothing):\n"
_GUARD = ("    keep = labels != IGNORE_INDEX\n"
          "    if not keep.any():\n"
          "        return prediction_logits.sum() * 0.0\n")
_BODY = "    logp = prediction_logits[keep].log_softmax(-1)\n" \
        "    nll = -logp.gather(-1, labels[keep].unsqueeze(-1)).squeeze(-1)\n"


def _loss(body):
    return {0: _DEF1 + _GUARD + body}


_DEF2 = ("def pretraining_loss(prediction_logits, seq_relationship_logits, labels, next_sentence_label,"
         " smoothing):\n    mlm = smoothed_mlm_loss(prediction_logits, labels, smoothing)\n")

MISTAKES = [
    Mistake("17.smoothed-mlm-loss", "eps-over-other-classes", _loss(
        _BODY + "    V = logp.shape[-1]\n"
        "    rest = -(logp.sum(-1) + nll)\n"
        "    return ((1 - smoothing) * nll + smoothing / (V - 1) * rest).mean()\n"), "V-1 other classes"),
    Mistake("17.smoothed-mlm-loss", "per-sentence-mean", _loss(
        "    logp = prediction_logits.log_softmax(-1)\n"
        "    nll = -logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)\n"
        "    per = ((1 - smoothing) * nll - smoothing * logp.mean(-1)) * keep\n"
        "    rows = keep.any(-1)\n"
        "    return (per.sum(-1)[rows] / keep.sum(-1)[rows]).mean()\n"), "per sentence"),
    Mistake("17.smoothed-mlm-loss", "uniform-summed", _loss(
        _BODY + "    return ((1 - smoothing) * nll - smoothing * logp.sum(-1)).mean()\n"), "not summed"),
    Mistake("17.smoothed-mlm-loss", "no-smoothing", _loss(_BODY + "    return nll.mean()\n"),
            "forget the smoothing"),
    Mistake("17.smoothed-mlm-loss", "divides-by-all-positions", _loss(
        _BODY + "    return ((1 - smoothing) * nll - smoothing * logp.mean(-1)).sum() / labels.numel()\n"),
        "B*T"),
    Mistake("17.smoothed-mlm-loss", "library-cross-entropy", {0: _DEF1 + _GUARD +
            "    return F.cross_entropy(prediction_logits[keep], labels[keep], label_smoothing=smoothing)\n"},
            "cross_entropy"),
    Mistake("17.smoothed-mlm-loss", "every-position-scored", {0: _DEF1 +
            "    logp = prediction_logits.log_softmax(-1)\n"
            "    nll = -logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)\n"
            "    return ((1 - smoothing) * nll - smoothing * logp.mean(-1)).mean()\n"}, "averaged over every position"),
    Mistake("17.smoothed-mlm-loss", "token-zero-taken-for-padding", {0: _DEF1 +
            "    keep = labels > 0\n"
            "    if not keep.any():\n        return prediction_logits.sum() * 0.0\n" + _BODY +
            "    return ((1 - smoothing) * nll - smoothing * logp.mean(-1)).mean()\n"}, "0 is a real token id"),
    Mistake("17.smoothed-mlm-loss", "summed-over-tokens", _loss(
        _BODY + "    return ((1 - smoothing) * nll - smoothing * logp.mean(-1)).sum()\n"), "summed over the selected"),
    Mistake("17.mlm-loss-empty", "mean-of-nothing", {0: _DEF1 +
            "    keep = labels != IGNORE_INDEX\n" + _BODY +
            "    return ((1 - smoothing) * nll - smoothing * logp.mean(-1)).mean()\n"}, "not NaN"),
    Mistake("17.mlm-loss-empty", "disconnected-zero", {0: "import torch\n" + _DEF1 +
            "    keep = labels != IGNORE_INDEX\n    if not keep.any():\n        return torch.tensor(0.0)\n"
            + _BODY + "    return ((1 - smoothing) * nll - smoothing * logp.mean(-1)).mean()\n"}, "connected"),
    Mistake("17.mlm-loss-empty", "python-zero", {0: _DEF1 +
            "    keep = labels != IGNORE_INDEX\n    if not keep.any():\n        return 0.0\n"
            + _BODY + "    return ((1 - smoothing) * nll - smoothing * logp.mean(-1)).mean()\n"},
            "should be a torch.Tensor"),
    Mistake("17.pretraining-loss", "nsp-unsmoothed", {1: _DEF2 +
            "    logp = seq_relationship_logits.log_softmax(-1)\n"
            "    keep = next_sentence_label != IGNORE_INDEX\n"
            "    nsp = -logp[keep].gather(-1, next_sentence_label[keep].unsqueeze(-1)).mean()\n"
            "    return mlm + nsp, mlm, nsp\n"}, "unsmoothed"),
    Mistake("17.pretraining-loss", "nsp-counts-ignored", {1: _DEF2 +
            "    logp = seq_relationship_logits.log_softmax(-1)\n"
            "    y = next_sentence_label.clamp(min=0)\n"
            "    nll = -logp.gather(-1, y.unsqueeze(-1)).squeeze(-1)\n"
            "    nsp = ((1 - smoothing) * nll - smoothing * logp.mean(-1)).mean()\n"
            "    return mlm + nsp, mlm, nsp\n"}, "were counted"),
    Mistake("17.pretraining-loss", "nsp-divided-by-batch-size", {1: _DEF2 +
            "    keep = (next_sentence_label != IGNORE_INDEX).float()\n"
            "    logp = seq_relationship_logits.log_softmax(-1)\n"
            "    nll = -logp.gather(-1, next_sentence_label.clamp(min=0).unsqueeze(-1)).squeeze(-1)\n"
            "    nsp = (((1 - smoothing) * nll - smoothing * logp.mean(-1)) * keep).sum() / len(keep)\n"
            "    return mlm + nsp, mlm, nsp\n"}, "divided by all B examples"),
    Mistake("17.pretraining-loss", "nsp-classes-read-the-other-way", {1: _DEF2 +
            "    flipped = torch.where(next_sentence_label == IGNORE_INDEX, next_sentence_label, 1 - next_sentence_label)\n"
            "    nsp = smoothed_mlm_loss(seq_relationship_logits[:, None], flipped[:, None], smoothing)\n"
            "    return mlm + nsp, mlm, nsp\n"}, "swapped the two NSP classes"),
    Mistake("17.pretraining-loss", "averaged-terms", {1: _DEF2 +
            "    nsp = smoothed_mlm_loss(seq_relationship_logits[:, None], next_sentence_label[:, None], smoothing)\n"
            "    return (mlm + nsp) / 2, mlm, nsp\n"}, "weight 1"),
    Mistake("17.pretraining-loss", "detached-total", {1: _DEF2 +
            "    nsp = smoothed_mlm_loss(seq_relationship_logits[:, None], next_sentence_label[:, None], smoothing)\n"
            "    return (mlm + nsp).detach(), mlm, nsp\n"}, "no gradient"),
]

_PRED = "import math\n\n"
MISTAKES += [
    Mistake("17.initial-loss", "mlm-term-only", {2: "predicted_initial_loss = 10.33\n"}, "masked-LM term alone"),
    Mistake("17.initial-loss", "decimal-logarithms", {2: _PRED + "predicted_initial_loss = math.log10(30522) + math.log10(2)\n"},
            "nats"),
    Mistake("17.initial-loss", "smoothing-lowers-it", {2: _PRED +
            "predicted_initial_loss = (1 - 0.1) * (math.log(30522) + math.log(2))\n"}, "label smoothing does not lower"),
    Mistake("17.initial-loss", "bits", {2: _PRED + "predicted_initial_loss = math.log2(30522) + 1\n"}, "bits"),
    Mistake("17.initial-loss", "vocabulary-size", {2: "predicted_initial_loss = 30522\n"}, "derive it"),
]

HONEST = [
    Honest("logsumexp-and-helper", {
        0: "import torch\n\ndef _log_probs(x):\n    return x - torch.logsumexp(x, dim=-1, keepdim=True)\n\n"
           + _DEF1 + "    keep = labels != IGNORE_INDEX\n"
           "    if keep.sum() == 0:\n        return 0.0 * prediction_logits.sum()\n"
           "    logp = _log_probs(prediction_logits[keep])\n"
           "    V = logp.shape[-1]\n"
           "    target = torch.full_like(logp, smoothing / V)\n"
           "    target[torch.arange(len(logp)), labels[keep]] += 1 - smoothing\n"
           "    return -(target * logp).sum(-1).mean()\n",
        1: _DEF2 + "    keep = next_sentence_label != IGNORE_INDEX\n"
           "    if not keep.any():\n        nsp = seq_relationship_logits.sum() * 0\n"
           "    else:\n"
           "        logp = seq_relationship_logits[keep].log_softmax(-1)\n"
           "        y = next_sentence_label[keep]\n"
           "        nsp = (-(1 - smoothing) * logp[range(len(y)), y] - smoothing * logp.mean(-1)).mean()\n"
           "    return mlm + nsp, mlm, nsp\n"}),
    Honest("float64-weights-everywhere", {
        2: "import math\n\npredicted_initial_loss = math.log(30_522) + math.log(2)   # ln V + ln 2\n",
        0: _DEF1 + "    w = (labels != IGNORE_INDEX).to(torch.float64)\n"
           "    logp = prediction_logits.double().log_softmax(-1)\n"
           "    nll = -logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)\n"
           "    per = (1 - smoothing) * nll - smoothing * logp.mean(-1)\n"
           "    return ((per * w).sum() / w.sum().clamp(min=1)).to(prediction_logits.dtype)\n"}),
    Honest("loop-over-tokens", {
        2: "predicted_initial_loss = 11.0\n",
        0: "import torch\n" + _DEF1 + "    total, n = prediction_logits.sum() * 0.0, 0\n"
           "    B, T, V = prediction_logits.shape\n"
           "    for b in range(B):\n        for t in range(T):\n"
           "            y = int(labels[b, t])\n"
           "            if y == IGNORE_INDEX:\n                continue\n"
           "            logp = prediction_logits[b, t].log_softmax(0)\n"
           "            total = total - (1 - smoothing) * logp[y] - smoothing * logp.mean()\n"
           "            n += 1\n"
           "    return total / max(n, 1)\n"}),
]
