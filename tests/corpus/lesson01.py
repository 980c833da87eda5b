"""Exercise 01 (blockwise attention with a running max): wrong answers a learner writes, and honest alternatives."""
from . import Honest, Mistake

_DEF = "import math\nimport torch\n\ndef blockwise_attention(q, k, v, mask=None, block_size=4):\n"


def _online(scale="1.0 / math.sqrt(q.shape[-1])", fill='float("-inf")', shift="new_max.masked_fill(new_max == float(\"-inf\"), 0.0)",
            rescale="(running_max - shift).exp()", stop="range(0, k.shape[-2], block_size)",
            mask_slice="~mask[..., start:stop]", finish="output = acc / running_sum.masked_fill(empty, 1.0)[..., None]\n"
            "    lse = running_max + running_sum.log()\n"):
    return (_DEF + f"    scale = {scale}\n"
            "    running_max = torch.full(q.shape[:-1], float('-inf'), dtype=q.dtype)\n"
            "    running_sum = torch.zeros(q.shape[:-1], dtype=q.dtype)\n"
            "    acc = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)\n"
            f"    for start in {stop}:\n"
            "        stop = start + block_size\n"
            "        scores = q @ k[..., start:stop, :].transpose(-2, -1) * scale\n"
            "        if mask is not None:\n"
            f"            scores = scores.masked_fill({mask_slice}, {fill})\n"
            "        new_max = torch.maximum(running_max, scores.amax(dim=-1))\n"
            f"        shift = {shift}\n"
            "        p = (scores - shift[..., None]).exp()\n"
            f"        rescale = {rescale}\n"
            "        running_sum = running_sum * rescale + p.sum(dim=-1)\n"
            "        acc = acc * rescale[..., None] + p @ v[..., start:stop, :]\n"
            "        running_max = new_max\n"
            "    empty = running_sum == 0\n"
            f"    {finish}"
            "    return output, lse\n")


_NAIVE = (_DEF + "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
          "    if mask is not None:\n        scores = scores.masked_fill(~mask, float('-inf'))\n"
          "    e = scores.exp()\n    s = e.sum(-1)\n"
          "    out = (e @ v) / s.clamp_min(1e-30)[..., None]\n    return out, s.log()\n")

MISTAKES = [
    Mistake("01.blockwise-unmasked", "no-scaling", {0: _online(scale="1.0")}, "√d_k"),
    Mistake("01.blockwise-unmasked", "exp-without-max", {0: _NAIVE}, "large scores"),
    Mistake("01.blockwise-unmasked", "no-rescale-when-max-grows", {0: _online(rescale="torch.ones_like(running_max)")},
            "differs from the reference"),
    Mistake("01.blockwise-unmasked", "drops-the-short-last-block",
            {0: _online(stop="range(0, k.shape[-2] - block_size + 1, block_size)")}, "expected"),
    Mistake("01.blockwise-masked", "inverted-mask", {0: _online(mask_slice="mask[..., start:stop]")}, "may attend"),
    Mistake("01.blockwise-masked", "nan-while-max-is-minus-inf", {0: _online(shift="new_max")}, "first blocks"),
    Mistake("01.blockwise-masked", "mask-always-first-block", {0: _online(mask_slice="~mask[..., :scores.shape[-1]]")},
            "differs from the reference"),
    Mistake("01.blockwise-fully-masked", "finite-fill-like-the-lesson",
            {0: _online(fill="torch.finfo(scores.dtype).min")}, "query 2 of batch 1"),
    Mistake("01.blockwise-fully-masked", "divides-by-zero",
            {0: _online(finish="output = acc / running_sum[..., None]\n    lse = running_max + running_sum.log()\n")}, "NaN"),
    Mistake("01.blockwise-fully-masked", "lse-zero-for-empty-rows",
            {0: _online(finish="output = acc / running_sum.masked_fill(empty, 1.0)[..., None]\n"
                               "    lse = (running_max + running_sum.log()).nan_to_num(neginf=0.0)\n")}, "-inf"),
]

HONEST = [
    Honest("full-matrix-logsumexp", {0: _DEF + "    scores = torch.einsum('...qd,...kd->...qk', q, k) / math.sqrt(q.shape[-1])\n"
                                          "    if mask is not None:\n        scores = scores.masked_fill(~mask, float('-inf'))\n"
                                          "    lse = torch.logsumexp(scores, dim=-1)\n"
                                          "    w = (scores - lse.nan_to_num(neginf=0.0)[..., None]).exp()\n"
                                          "    w = torch.where(torch.isfinite(lse)[..., None], w, torch.zeros_like(w))\n"
                                          "    return w @ v, lse\n"}),
    Honest("float64-blocks-with-helper", {0: "import math\nimport torch\n\n"
                                               "def _block_stats(scores):\n"
                                               "    m = scores.amax(-1)\n"
                                               "    safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)\n"
                                               "    return safe, (scores - safe[..., None]).exp()\n\n"
                                               "def blockwise_attention(q, k, v, mask=None, block_size=4):\n"
                                               "    qd, kd, vd = q.double(), k.double(), v.double()\n"
                                               "    lse = torch.full(q.shape[:-1], float('-inf'), dtype=torch.float64)\n"
                                               "    acc = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=torch.float64)\n"
                                               "    for start in range(0, k.shape[-2], block_size):\n"
                                               "        sl = slice(start, start + block_size)\n"
                                               "        s = qd @ kd[..., sl, :].transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
                                               "        if mask is not None:\n"
                                               "            s = torch.where(mask[..., sl], s, torch.tensor(float('-inf'), dtype=s.dtype))\n"
                                               "        m, p = _block_stats(s)\n"
                                               "        block_lse = m + p.sum(-1).log()\n"
                                               "        new = torch.logaddexp(lse, block_lse)\n"
                                               "        new_safe = torch.where(torch.isinf(new), torch.zeros_like(new), new)\n"
                                               "        acc = acc * (lse - new_safe).exp()[..., None] + (p @ vd[..., sl, :]) * (m - new_safe).exp()[..., None]\n"
                                               "        lse = new\n"
                                               "    return acc.to(q.dtype), lse.to(q.dtype)\n"}),
]
