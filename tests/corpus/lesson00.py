"""Exercise 00 (softmax warm-up): wrong answers a learner writes, and honest alternatives."""
from . import Honest, Mistake

_DEF = "def softmax(x):\n"

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
]

HONEST = [
    Honest("logsumexp", {0: "import torch\n" + _DEF + "    return (x - torch.logsumexp(x, dim=-1, keepdim=True)).exp()\n"}),
    Honest("float64-inside", {0: _DEF + "    y = x.double()\n    e = (y - y.amax(-1, keepdim=True)).exp()\n"
                                  "    return (e / e.sum(-1, keepdim=True)).to(x.dtype)\n"}),
    Honest("helper-function", {0: "def _stable_exp(x):\n    return (x - x.max(dim=-1, keepdim=True).values).exp()\n\n"
                                   + _DEF + "    e = _stable_exp(x)\n    return e / e.sum(dim=-1, keepdim=True)\n"}),
]
