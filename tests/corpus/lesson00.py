"""Exercise 00 (masked softmax warm-up): wrong answers a learner writes, and honest alternatives."""
from . import Honest, Mistake

_DEF = "def softmax(x, mask=None):\n"
_MASK_INF = "    if mask is not None:\n        x = x.masked_fill(~mask, float('-inf'))\n"
_STABLE = ("    e = (x - x.max(dim=-1, keepdim=True).values).exp()\n"
           "    return e / e.sum(dim=-1, keepdim=True)\n")

MISTAKES = [
    Mistake("00.softmax", "no-max-subtraction",
            {0: _DEF + "    e = x.exp()\n    return e / e.sum(dim=-1, keepdim=True)\n"}, "NaN"),
    Mistake("00.softmax", "wrong-axis",
            {0: _DEF + "    e = (x - x.max(dim=0, keepdim=True).values).exp()\n"
                "    return e / e.sum(dim=0, keepdim=True)\n"}, "differs from the reference"),
    Mistake("00.softmax", "no-normalisation",
            {0: _DEF + "    return (x - x.max(dim=-1, keepdim=True).values).exp()\n"}, "differs"),
    Mistake("00.softmax", "library-softmax",
            {0: "import torch\n" + _DEF + "    return torch.softmax(x, dim=-1)\n"}, "softmax"),
    # the mask applied after exp(): the maximum may be a masked score, and every kept exp() underflows
    Mistake("00.masked-softmax", "mask-after-exp",
            {0: _DEF + "    e = (x - x.max(dim=-1, keepdim=True).values).exp()\n"
                "    if mask is not None:\n        e = e * mask\n    return e / e.sum(dim=-1, keepdim=True)\n"},
            "maximum of the kept scores"),
    Mistake("00.masked-softmax", "normalised-before-masking",
            {0: _DEF + _STABLE.replace("    return e / e.sum(dim=-1, keepdim=True)\n",
                                       "    p = e / e.sum(dim=-1, keepdim=True)\n"
                                       "    return p if mask is None else p * mask\n")},
            "sum to 1"),
    Mistake("00.masked-softmax", "mask-ignored", {0: _DEF + _STABLE}, "masked position"),
    Mistake("00.masked-softmax", "mask-inverted",
            {0: _DEF + "    if mask is not None:\n        x = x.masked_fill(mask, float('-inf'))\n" + _STABLE},
            "inverted"),
    Mistake("00.fully-masked", "nan-rows", {0: _DEF + _MASK_INF + _STABLE}, "NaN"),
    # a large finite negative instead of -inf: a fully masked row becomes uniform
    Mistake("00.fully-masked", "minus-1e9",
            {0: _DEF + "    if mask is not None:\n        x = x.masked_fill(~mask, -1e9)\n" + _STABLE},
            "all zeros"),
    Mistake("00.fully-masked", "nan-to-num-one",
            {0: _DEF + _MASK_INF + _STABLE.replace("    return e / e.sum(dim=-1, keepdim=True)\n",
                                                   "    return (e / e.sum(dim=-1, keepdim=True)).nan_to_num(1.0)\n")},
            "all zeros"),
]

HONEST = [
    Honest("logsumexp", {0: "import torch\n" + _DEF + _MASK_INF
                         + "    lse = torch.logsumexp(x, dim=-1, keepdim=True)\n"
                         "    return (x - lse).exp().nan_to_num(0.0)\n"}),
    Honest("float64-inside-multiplied-mask",
           {0: "import torch\n" + _DEF
            + "    y = x.double()\n"
            "    keep = torch.ones_like(y, dtype=torch.bool) if mask is None else mask.expand_as(y)\n"
            "    top = y.masked_fill(~keep, -1e300).amax(-1, keepdim=True)\n"
            "    e = (y - top).clamp(max=0).exp() * keep\n"
            "    s = e.sum(-1, keepdim=True)\n"
            "    return torch.where(s > 0, e / s.clamp_min(1e-300), torch.zeros_like(e)).to(x.dtype)\n"}),
    Honest("helper-function", {0: "import torch\n\ndef _stable_exp(x):\n"
                               "    top = x.max(dim=-1, keepdim=True).values\n"
                               "    return (x - torch.where(torch.isinf(top), torch.zeros_like(top), top)).exp()\n\n"
                               + _DEF + _MASK_INF + "    e = _stable_exp(x)\n"
                               "    s = e.sum(dim=-1, keepdim=True)\n"
                               "    return torch.where(s == 0, torch.zeros_like(e), e / s)\n"}),
]
