"""Exercise 19 (attention pooling with padding): wrong answers a learner writes, honest alternatives."""
from . import Honest, Mistake

_DEF = "def attention_pooling(hidden_states, attention_mask, query):\n"
_SCORES = "    scores = hidden_states @ query\n    real = attention_mask.bool()\n"


def _a(body):
    return {0: "import torch\n" + _DEF + body}


MISTAKES = [
    Mistake("19.attention-pooling", "padding-not-masked", _a(
        "    w = torch.softmax(hidden_states @ query, dim=1)\n"
        "    return (w.unsqueeze(-1) * hidden_states).sum(1)\n"), "padded positions took part"),
    Mistake("19.attention-pooling", "no-max-subtraction", _a(
        _SCORES + "    e = scores.exp() * real\n"
        "    w = e / e.sum(1, keepdim=True).clamp(min=1e-12)\n"
        "    return (w.unsqueeze(-1) * hidden_states).sum(1)\n"), "NaN or inf"),
    Mistake("19.attention-pooling", "softmax-then-zero-padding", _a(
        _SCORES + "    w = torch.softmax(scores, dim=1) * real\n"
        "    w = w / w.sum(1, keepdim=True).clamp(min=1e-12)\n"
        "    return (w.unsqueeze(-1) * hidden_states).sum(1)\n"), "changing only the padding vectors"),
    Mistake("19.attention-pooling", "wrong-axis", _a(
        _SCORES + "    w = torch.softmax(scores.masked_fill(~real, -1e9), dim=0)\n"
        "    return (w.unsqueeze(-1) * hidden_states).sum(1)\n"), "dim 0"),
    Mistake("19.attention-pooling", "right-padding-lengths-only", _a(
        "    lengths = attention_mask.sum(1).long()\n"
        "    T = hidden_states.shape[1]\n"
        "    real = torch.arange(T)[None] < lengths[:, None]\n"
        + "    scores = (hidden_states @ query).masked_fill(~real, -1e9)\n"
        "    w = torch.softmax(scores, dim=1) * real\n"
        "    return (w.unsqueeze(-1) * hidden_states).sum(1)\n"), "left padding"),
    Mistake("19.attention-pooling-minilm", "padding-not-masked", _a(
        "    w = torch.softmax(hidden_states @ query, dim=1)\n"
        "    return (w.unsqueeze(-1) * hidden_states).sum(1)\n"), "padded positions took part"),
    Mistake("19.attention-pooling-minilm", "masked-mean-only", _a(
        "    m = attention_mask.unsqueeze(-1).to(hidden_states.dtype)\n"
        "    return (hidden_states * m).sum(1) / m.sum(1).clamp(min=1)\n"), "masked mean"),
    Mistake("19.attention-pooling-minilm", "scaled-scores", _a(
        _SCORES + "    scores = scores / hidden_states.shape[-1] ** 0.5\n"
        "    w = torch.softmax(scores.masked_fill(~real, -1e9), dim=1) * real\n"
        "    return (w.unsqueeze(-1) * hidden_states).sum(1)\n"), "scaled the scores"),
]

_GOOD = ("    real = attention_mask.bool()\n"
         "    w = torch.softmax((hidden_states @ query).masked_fill(~real, float('-inf')), dim=1)\n")
MISTAKES += [
    Mistake("19.attention-pooling-dtype", "always-float32", _a(
        "    hidden_states, query = hidden_states.float(), query.float()\n" + _GOOD +
        "    return (w.unsqueeze(-1) * hidden_states).sum(1)\n"), "returned float32"),
    Mistake("19.attention-pooling-dtype", "default-dtype-buffer", _a(
        _GOOD + "    out = torch.zeros(hidden_states.shape[0], hidden_states.shape[2])\n"
        "    for b in range(hidden_states.shape[0]):\n"
        "        out[b] = w[b] @ hidden_states[b]\n"
        "    return out\n"), "returned float32"),
    Mistake("19.attention-pooling-dtype", "always-float64", _a(
        "    hidden_states, query = hidden_states.double(), query.double()\n" + _GOOD +
        "    return (w.unsqueeze(-1) * hidden_states).sum(1)\n"), "returned float64"),
]

_LAST = "import torch\n\ndef last_token_pooling(hidden_states, attention_mask):\n"
MISTAKES += [
    Mistake("19.last-token", "last-position-of-the-tensor", {2: _LAST + "    return hidden_states[:, -1]\n"},
            "last position of the padded tensor"),
    Mistake("19.last-token", "length-minus-one", {2: _LAST +
            "    last = attention_mask.long().sum(1) - 1\n"
            "    return hidden_states[torch.arange(hidden_states.shape[0]), last]\n"}, "assumes right padding"),
    Mistake("19.last-token", "first-real-token", {2: _LAST +
            "    first = attention_mask.long().argmax(1)\n"
            "    return hidden_states[torch.arange(hidden_states.shape[0]), first]\n"}, "the first real token"),
    Mistake("19.last-token", "cls-position", {2: _LAST + "    return hidden_states[:, 0]\n"}, "real token"),
]

HONEST = [
    Honest("masked-torch-softmax", {**_a(
        "    real = attention_mask.bool()\n"
        "    scores = (hidden_states * query).sum(-1).masked_fill(~real, torch.finfo(hidden_states.dtype).min)\n"
        "    w = torch.softmax(scores, dim=-1) * real\n"
        "    return torch.bmm(w.unsqueeze(1), hidden_states).squeeze(1)\n"),
        1: "predicted_spearman = dict([('[CLS]', 0.75), ('mean', 0.9), ('last token', 0.6)])\n",
        2: _LAST + "    mask = attention_mask.long()\n"
           "    T = mask.shape[1]\n"
           "    left_padded = mask[:, -1] == 1            # a row that ends with a real token\n"
           "    last = torch.where(left_padded, torch.full_like(mask[:, 0], T - 1), mask.sum(1) - 1)\n"
           "    return hidden_states[torch.arange(len(last)), last]\n"}),
    Honest("float64-loop-over-rows", {**_a(
        "    out = torch.zeros(hidden_states.shape[0], hidden_states.shape[2], dtype=torch.float64)\n"
        "    rows = []\n"
        "    for b in range(hidden_states.shape[0]):\n"
        "        keep = attention_mask[b] != 0\n"
        "        if not keep.any():\n"
        "            rows.append(hidden_states[b, 0].double() * 0)\n"
        "            continue\n"
        "        h = hidden_states[b][keep].double()\n"
        "        s = h @ query.double()\n"
        "        w = (s - s.max()).exp()\n"
        "        rows.append((w / w.sum()) @ h)\n"
        "    return torch.stack(rows).to(hidden_states.dtype)\n"),
        2: _LAST + "    rows = []\n"
           "    for b in range(hidden_states.shape[0]):\n"
           "        where = torch.nonzero(attention_mask[b] > 0).flatten()\n"
           "        rows.append(hidden_states[b, int(where[-1])])\n"
           "    return torch.stack(rows)\n"}),
    Honest("logsumexp-helper", {0: "import torch\n\ndef _masked_log_weights(scores, real):\n"
        "    scores = scores.masked_fill(~real, float('-inf'))\n"
        "    norm = torch.logsumexp(scores, dim=1, keepdim=True)\n"
        "    return scores - torch.where(torch.isfinite(norm), norm, torch.zeros_like(norm))\n\n"
        + _DEF + "    w = _masked_log_weights(hidden_states @ query, attention_mask > 0).exp()\n"
        "    return (w[..., None] * hidden_states).sum(dim=1)\n"}),
]
