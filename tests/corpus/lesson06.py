"""Exercise 06 (the embedding factor for any init, derived, then measured in a model): wrong answers a learner
writes from the task text, and honest alternatives."""
from . import Honest, Mistake


def _factor(body):
    return "import math\n\ndef factor_for_ratio(init_std, d_model, ratio):\n" + body


def _measure(tokens="embedding(input_ids)",
             positions="positional(torch.zeros(1, input_ids.shape[1], t.shape[-1]))[0]",
             result="t.norm(dim=-1).mean() / p.norm(dim=-1).mean()"):
    return ("import torch\n\ndef norm_ratio(embedding, positional, input_ids):\n"
            "    with torch.no_grad():\n"
            f"        t = {tokens}\n"
            f"        p = {positions}\n"
            f"        return float({result})\n")


MISTAKES = [
    # 06.factor: the derivation
    Mistake("06.factor", "position-norm-sqrt-d", {0: _factor("    return ratio * math.sqrt(d_model) / (init_std * math.sqrt(d_model))\n")},
            "d_model/2 pairs"),
    Mistake("06.factor", "always-sqrt-d", {0: _factor("    return math.sqrt(d_model)\n")}, "whatever the init"),
    Mistake("06.factor", "token-norm-is-the-std", {0: _factor("    return ratio * math.sqrt(d_model / 2) / init_std\n")},
            "a row has d_model"),
    Mistake("06.factor", "ratio-inverted", {0: _factor("    return math.sqrt(d_model / 2) / (ratio * init_std * math.sqrt(d_model))\n")},
            "inverse"),
    Mistake("06.factor", "variance-for-std", {0: _factor("    return ratio * math.sqrt(d_model / 2) / (init_std ** 2 * math.sqrt(d_model))\n")},
            "init_std²"),
    Mistake("06.factor", "ratio-of-variances", {0: _factor("    return math.sqrt(ratio / 2) / init_std\n")},
            "variances"),
    # 06.measure-ratio: the measurement
    Mistake("06.measure-ratio", "norm-of-token-plus-position", {1: _measure(tokens="positional(embedding(input_ids))")},
            "token + position"),
    Mistake("06.measure-ratio", "squared-norms", {1: _measure(result="t.pow(2).sum(-1).mean() / p.pow(2).sum(-1).mean()")},
            "squared"),
    Mistake("06.measure-ratio", "sums-not-means", {1: _measure(result="t.norm(dim=-1).sum() / p.norm(dim=-1).sum()")},
            "take the means"),
    Mistake("06.measure-ratio", "position-over-token", {1: _measure(result="p.norm(dim=-1).mean() / t.norm(dim=-1).mean()")},
            "token : position"),
    Mistake("06.measure-ratio", "norm-over-the-sequence-axis", {1: _measure(result="t.norm(dim=1).mean() / p.norm(dim=0).mean()")},
            "wrong axis"),
]

HONEST = [
    # the mean norm of a Gaussian row (chi distribution) instead of its RMS; a measurement in RMS terms
    Honest("exact-mean-norm-and-rms-measure", {
        0: _factor("    mean_token = init_std * math.sqrt(2) * math.exp(math.lgamma((d_model + 1) / 2) - math.lgamma(d_model / 2))\n"
                   "    return ratio * math.sqrt(d_model / 2) / mean_token\n"),
        1: "import torch\n\ndef norm_ratio(embedding, positional, input_ids):\n"
           "    tokens = embedding(input_ids).detach()\n"
           "    pos = (positional(tokens) - tokens)[0]                # the position vectors, rows 0..T-1\n"
           "    return (tokens.pow(2).sum(-1).mean().sqrt() / pos.pow(2).sum(-1).mean().sqrt()).item()\n"}),
    # per-pair reasoning written out; the ratio measured token by token against its own position
    Honest("per-entry-and-per-token", {
        0: _factor("    per_entry_position = 0.5 ** 0.5          # sin² + cos² = 1 per pair: mean square 1/2 per entry\n"
                   "    return ratio * per_entry_position / init_std\n"),
        1: "import torch\n\ndef norm_ratio(embedding, positional, input_ids):\n"
           "    B, T = input_ids.shape\n"
           "    with torch.no_grad():\n"
           "        e = embedding(input_ids)\n"
           "        p = positional(torch.zeros_like(e))                   # (B, T, d): the same rows for every b\n"
           "        return (e.norm(dim=-1) / p.norm(dim=-1)).mean().item()\n"}),
]
