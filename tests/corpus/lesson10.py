"""Exercise 10 (GELU's derivative, SwiGLU feed-forward): wrong answers and honest alternatives."""
from . import Honest, Mistake

_G = "import math\nimport torch\n\ndef gelu_grad(x):\n"
_PHI = "    cdf = 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))\n"
_INIT = ("import math\nimport torch\nfrom torch import nn\n\nclass SwiGLUFeedForward(nn.Module):\n"
         "    def __init__(self, d_model, d_ff=None, multiple_of=1):\n        super().__init__()\n"
         "        if d_ff is None:\n            d_ff = multiple_of * math.ceil(int(8 * d_model / 3) / multiple_of)\n"
         "        self.w_gate = nn.Linear(d_model, d_ff, bias=False)\n"
         "        self.w_up = nn.Linear(d_model, d_ff, bias=False)\n"
         "        self.w_down = nn.Linear(d_ff, d_model, bias=False)\n\n")


def _swiglu(forward, init=_INIT):
    return init + "    def forward(self, x):\n" + forward


MISTAKES = [
    Mistake("10.gelu-grad", "cdf-only-no-product-rule",
            {0: _G + _PHI + "    return cdf\n"}, "worked example"),
    Mistake("10.gelu-grad", "pdf-exp-without-half",
            {0: _G + _PHI + "    return cdf + x * torch.exp(-x * x) / math.sqrt(2 * math.pi)\n"}, "expected"),
    Mistake("10.gelu-grad", "pdf-unnormalised",
            {0: _G + _PHI + "    return cdf + x * torch.exp(-0.5 * x * x)\n"}, "differs from the reference"),
    Mistake("10.gelu-grad", "erf-without-sqrt2",
            {0: _G + "    cdf = 0.5 * (1.0 + torch.erf(x))\n"
                "    return cdf + x * torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)\n"}, "differs"),
    Mistake("10.gelu-grad", "tanh-form-derivative",
            {0: _G + "    c = math.sqrt(2 / math.pi)\n    t = torch.tanh(c * (x + 0.044715 * x ** 3))\n"
                "    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)\n"},
            "worked example"),
    Mistake("10.gelu-grad", "autograd",
            {0: _G + "    z = x.detach().clone().requires_grad_(True)\n"
                "    (0.5 * z * (1 + torch.erf(z / math.sqrt(2)))).sum().backward()\n    return z.grad\n"},
            "write it yourself"),
    Mistake("10.gelu-grad", "ratio-form-nan-on-large-inputs",
            {0: _G + _PHI + "    pdf = torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)\n"
                "    return cdf * (1 + x * pdf / cdf)\n"}, "NaN"),
    Mistake("10.swiglu", "silu-on-the-up-branch",
            {1: _swiglu("        u = self.w_up(x)\n        return self.w_down(self.w_gate(x) * u * torch.sigmoid(u))\n")},
            "SiLU is on the w_up branch"),
    Mistake("10.swiglu", "no-gate",
            {1: _swiglu("        g = self.w_gate(x)\n        return self.w_down(g * torch.sigmoid(g))\n")}, "no gate"),
    Mistake("10.swiglu", "geglu",
            {1: _swiglu("        g = self.w_gate(x)\n"
                        "        return self.w_down(0.5 * g * (1 + torch.erf(g / math.sqrt(2))) * self.w_up(x))\n")},
            "GEGLU"),
    Mistake("10.swiglu", "sigmoid-gate",
            {1: _swiglu("        return self.w_down(torch.sigmoid(self.w_gate(x)) * self.w_up(x))\n")}, "plain sigmoid"),
    Mistake("10.swiglu", "hidden-size-not-rounded-up",
            {1: _swiglu("        g = self.w_gate(x)\n        return self.w_down(g * torch.sigmoid(g) * self.w_up(x))\n",
                        _INIT.replace("multiple_of * math.ceil(int(8 * d_model / 3) / multiple_of)",
                                      "int(8 * d_model / 3)"))}, "rounded up to a multiple"),
    Mistake("10.swiglu", "bert-hidden-size",
            {1: _swiglu("        g = self.w_gate(x)\n        return self.w_down(g * torch.sigmoid(g) * self.w_up(x))\n",
                        _INIT.replace("multiple_of * math.ceil(int(8 * d_model / 3) / multiple_of)",
                                      "4 * d_model"))}, "d_ff is"),
    Mistake("10.swiglu", "with-biases",
            {1: _swiglu("        g = self.w_gate(x)\n        return self.w_down(g * torch.sigmoid(g) * self.w_up(x))\n",
                        _INIT.replace(", bias=False", ""))}, "bias"),
]

HONEST = [
    Honest("float64-inside-and-functional-silu", {
        0: _G + "    z = x.double()\n    phi = torch.exp(-z.square() / 2) / math.sqrt(2 * math.pi)\n"
           "    Phi = 0.5 * torch.erfc(-z / math.sqrt(2))\n    return (Phi + z * phi).to(x.dtype)\n",
        1: "import math\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n"
           "class SwiGLUFeedForward(nn.Module):\n    def __init__(self, d_model, d_ff=None, multiple_of=1):\n"
           "        super().__init__()\n        hidden = d_ff if d_ff is not None else -(-int(2 * 4 * d_model / 3) // multiple_of) * multiple_of\n"
           "        for name, (i, o) in {'w_gate': (d_model, hidden), 'w_up': (d_model, hidden), 'w_down': (hidden, d_model)}.items():\n"
           "            setattr(self, name, nn.Linear(i, o, bias=False))\n\n"
           "    def forward(self, x):\n        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))\n"}),
    Honest("special-ndtr-and-einsum", {
        0: "import math\nimport torch\n\ndef gelu_grad(x):\n"
           "    return torch.special.ndtr(x) + x * torch.exp(-0.5 * x ** 2) * (1 / math.sqrt(2 * math.pi))\n",
        1: "import math\nimport torch\nfrom torch import nn\n\n"
           "def _silu(z):\n    return z / (1 + torch.exp(-z))\n\n"
           "class SwiGLUFeedForward(nn.Module):\n    def __init__(self, d_model, d_ff=None, multiple_of=1):\n"
           "        super().__init__()\n        if d_ff is None:\n            d_ff = int(2 * 4 * d_model / 3)\n"
           "            while d_ff % multiple_of:\n                d_ff += 1\n"
           "        self.w_gate = nn.Linear(d_model, d_ff, bias=False)\n        self.w_up = nn.Linear(d_model, d_ff, bias=False)\n"
           "        self.w_down = nn.Linear(d_ff, d_model, bias=False)\n\n"
           "    def forward(self, x):\n        g = torch.einsum('...d,fd->...f', x, self.w_gate.weight)\n"
           "        u = torch.einsum('...d,fd->...f', x, self.w_up.weight)\n"
           "        return torch.einsum('...f,df->...d', _silu(g) * u, self.w_down.weight)\n"}),
]
