"""Exercise 10 (how each piece's non-linearity scales with its input: predict, measure; collapsing affine stacks
into one layer): wrong answers a learner writes from the task text, and honest alternatives.

Answer cells: 0 the predictions, 1 `nonlinearity_exponent`, 2 `collapse`, 3 the written answer."""
from . import Honest, Mistake

_RIGHT = '{"ReLU FFN": 0, "GELU FFN": 1, "tanh FFN": 2, "LayerNorm": 0, "attention": 2}'


def _pred(**changes):
    import ast
    values = ast.literal_eval(_RIGHT)
    values.update({k.replace("_", " "): v for k, v in changes.items()})
    return f"predicted_exponents = {values!r}\n"


def _exponent(error="(fxy - fx - fy + f0).norm() / ((fx - f0).norm() + (fy - f0).norm())",
              inputs="s * x, s * y", slope="(logs[-1] - logs[0]) / (math.log10(sigmas[-1]) - math.log10(sigmas[0]))",
              log="math.log10"):
    return ("import math\nimport torch\n\n"
            "def nonlinearity_exponent(f, x, y, sigmas):\n"
            "    logs = []\n"
            "    for s in sigmas:\n"
            "        with torch.no_grad():\n"
            f"            a, b = {inputs}\n"
            "            f0 = f(torch.zeros_like(x))\n"
            "            fx, fy, fxy = f(a), f(b), f(a + b)\n"
            f"            logs.append({log}(({error}).item()))\n"
            f"    return {slope}\n")


_FOLD = ("import torch\nfrom torch import nn\n\n"
         "def collapse(stack):\n"
         "    W = b = None\n"
         "    with torch.no_grad():\n"
         "        for m in stack:\n"
         "            if isinstance(m, nn.Linear):\n"
         "                A = m.weight\n"
         "                c = m.bias if m.bias is not None else torch.zeros(m.out_features)\n"
         "            elif isinstance(m, nn.BatchNorm1d):\n"
         "                s = m.weight / torch.sqrt(m.running_var + m.eps)\n"
         "                A, c = torch.diag(s), m.bias - s * m.running_mean\n"
         "            elif isinstance(m, (nn.Identity, nn.Dropout)):\n"
         "                continue\n"
         "            else:\n"
         "                raise ValueError(type(m).__name__)\n"
         "            W, b = (A, c) if W is None else (A @ W, A @ b + c)\n"
         "        layer = nn.Linear(W.shape[1], W.shape[0])\n"
         "        layer.weight.copy_(W)\n"
         "        layer.bias.copy_(b)\n"
         "    return layer\n")


def _fold(old, new):
    assert old in _FOLD, old
    return _FOLD.replace(old, new)


_PROBE = ("import torch\nfrom torch import nn\n\n"
          "def collapse(stack):\n"
          "    d_in = next(m for m in stack if isinstance(m, (nn.Linear, nn.BatchNorm1d)))\n"
          "    d_in = d_in.in_features if isinstance(d_in, nn.Linear) else d_in.num_features\n"
          "    with torch.no_grad():\n"
          "        b = stack(torch.zeros(1, d_in))[0]\n"
          "        W = (stack(torch.eye(d_in)) - b).T          # column i: f(e_i) - f(0)\n"
          "{test}"
          "        layer = nn.Linear(d_in, W.shape[0])\n"
          "        layer.weight.copy_(W)\n"
          "        layer.bias.copy_(b)\n"
          "    return layer\n")
_ADDITIVITY_TEST = ("        g = torch.Generator().manual_seed(0)\n"
                    "        x, y = torch.randn(4, d_in, generator=g), torch.randn(4, d_in, generator=g)\n"
                    "        gap = stack(x + y) - stack(x) - stack(y) + b\n"
                    "        if gap.abs().max() > 1e-4 * (1 + stack(x).abs().max()):\n"
                    "            raise ValueError('the stack is not affine: f(x + y) != f(x) + f(y) - f(0)')\n")

MISTAKES = [
    # the measurement
    Mistake("10.exponent", "absolute-gap", {1: _exponent(error="(fxy - fx - fy + f0).norm()")}, "absolute gap"),
    Mistake("10.exponent", "no-f0", {1: _exponent(error="(fxy - fx - fy).norm() / (fx.norm() + fy.norm())")},
            "without f(0)"),
    Mistake("10.exponent", "only-x-scaled", {1: _exponent(inputs="s * x, y")}, "only x was scaled"),
    Mistake("10.exponent", "slope-upside-down",
            {1: _exponent(slope="(logs[0] - logs[-1]) / (math.log10(sigmas[-1]) - math.log10(sigmas[0]))")},
            "sign is flipped"),
    Mistake("10.exponent", "mixed-log-bases", {1: _exponent(log="math.log")}, "one base"),
    Mistake("10.exponent", "the-error-not-its-slope", {1: _exponent(slope="10 ** logs[0]")}, "at one σ"),
    # the predictions
    Mistake("10.prediction", "relu-fades-like-gelu", {0: _pred(ReLU_FFN=1)}, "positively homogeneous"),
    Mistake("10.prediction", "tanh-quadratic", {0: _pred(tanh_FFN=1)}, "odd"),
    Mistake("10.prediction", "layernorm-fades", {0: _pred(LayerNorm=1)}, "scale-invariant"),
    Mistake("10.prediction", "attention-linear-in-the-scores", {0: _pred(attention=1)}, "quadratic in x"),
    Mistake("10.prediction", "gelu-like-relu", {0: _pred(GELU_FFN=0)}, "smooth at 0"),
    Mistake("10.prediction", "a-piece-missing", {0: 'predicted_exponents = {"ReLU FFN": 0, "GELU FFN": 1, "tanh FFN": 2}\n'},
            "misses LayerNorm, attention"),
    # collapsing
    Mistake("10.collapse", "last-bias-only", {2: _fold("W, b = (A, c) if W is None else (A @ W, A @ b + c)",
                                                       "W, b = (A, c) if W is None else (A @ W, c)")},
            "only the last layer's bias"),
    Mistake("10.collapse", "batchnorm-skipped", {2: _fold("elif isinstance(m, (nn.Identity, nn.Dropout)):",
                                                          "elif isinstance(m, (nn.Identity, nn.Dropout, nn.BatchNorm1d)):")
                                                 .replace("elif isinstance(m, nn.BatchNorm1d):", "elif False:")},
            "BatchNorm was skipped"),
    Mistake("10.collapse", "batchnorm-refused", {2: _fold("elif isinstance(m, nn.BatchNorm1d):", "elif False:")},
            "fixed running statistics"),
    Mistake("10.collapse", "dropout-scales", {2: _fold("            elif isinstance(m, (nn.Identity, nn.Dropout)):\n",
                                                       "            elif isinstance(m, nn.Dropout):\n"
                                                       "                A, c = (1 - m.p) * torch.eye(W.shape[0]), torch.zeros(W.shape[0])\n"
                                                       "            elif isinstance(m, nn.Identity):\n")},
            "Dropout in eval mode is the identity"),
    # refusing non-linear stacks
    Mistake("10.collapse-nonlinear", "probe-without-a-test", {2: _PROBE.format(test="")}, "raise ValueError"),
    Mistake("10.collapse-nonlinear", "layernorm-as-its-scale-and-shift",
            {2: _fold("            elif isinstance(m, (nn.Identity, nn.Dropout)):\n",
                      "            elif isinstance(m, nn.LayerNorm):\n"
                      "                A, c = torch.diag(m.weight), m.bias\n"
                      "            elif isinstance(m, (nn.Identity, nn.Dropout)):\n")},
            "LayerNorm divides each token"),
    Mistake("10.collapse-nonlinear", "only-activations-refused",
            {2: _fold("            else:\n                raise ValueError(type(m).__name__)\n",
                      "            elif isinstance(m, (nn.ReLU, nn.GELU, nn.Tanh, nn.SiLU)):\n"
                      "                raise ValueError(type(m).__name__)\n"
                      "            else:\n                continue\n")},
            "raise ValueError"),
]

HONEST = [
    Honest("black-box-probes", {
        0: 'predicted_exponents = {"ReLU FFN": 0.0, "GELU FFN": 1.0, "tanh FFN": 2.0, "LayerNorm": 0.0, "attention": 2.0}\n',
        1: "import numpy as np\nimport torch\n\n"
           "def nonlinearity_exponent(f, x, y, sigmas):\n"
           "    def gap(s):\n"
           "        f0 = f(0 * x)\n"
           "        return float((f(s * x + s * y) - f(s * x) - f(s * y) + f0).norm() / (f(s * (x + y)) - f0).norm())\n"
           "    with torch.no_grad():\n"
           "        slope, _ = np.polyfit(np.log(sigmas), np.log([gap(s) for s in sigmas]), 1)\n"
           "    return float(slope)\n",
        2: _PROBE.format(test=_ADDITIVITY_TEST),
    }),
    Honest("endpoints-and-float64-folding", {
        1: _exponent(),
        2: "import torch\nfrom torch import nn\n\n"
           "def collapse(stack):\n"
           "    pieces = list(stack)\n"
           "    first = next(m for m in pieces if isinstance(m, (nn.Linear, nn.BatchNorm1d)))\n"
           "    n = first.in_features if isinstance(first, nn.Linear) else first.num_features\n"
           "    W, b = torch.eye(n, dtype=torch.float64), torch.zeros(n, dtype=torch.float64)\n"
           "    for m in pieces:\n"
           "        if isinstance(m, nn.Linear):\n"
           "            A = m.weight.detach().double()\n"
           "            W, b = A @ W, A @ b + (m.bias.detach().double() if m.bias is not None else 0)\n"
           "        elif isinstance(m, nn.BatchNorm1d):\n"
           "            s = (m.weight / (m.running_var + m.eps).sqrt()).detach().double()\n"
           "            W, b = s[:, None] * W, s * (b - m.running_mean.double()) + m.bias.detach().double()\n"
           "        elif type(m) not in (nn.Identity, nn.Dropout):\n"
           "            raise ValueError(f'{m} is not an affine map of its input')\n"
           "    out = nn.Linear(W.shape[1], W.shape[0])\n"
           "    out.weight.data = W.float()\n"
           "    out.bias.data = b.float()\n"
           "    return out\n",
    }),
    Honest("jacobian-at-zero", {
        2: "import torch\nfrom torch import nn\n\n"
           "def collapse(stack):\n"
           "    linear_kinds = (nn.Linear, nn.Identity, nn.Dropout, nn.BatchNorm1d)\n"
           "    bad = [type(m).__name__ for m in stack if not isinstance(m, linear_kinds)]\n"
           "    if bad:\n"
           "        raise ValueError(f'not affine: {bad}')\n"
           "    first = next(m for m in stack if isinstance(m, (nn.Linear, nn.BatchNorm1d)))\n"
           "    d_in = getattr(first, 'in_features', None) or first.num_features\n"
           "    zero = torch.zeros(1, d_in)\n"
           "    J = torch.autograd.functional.jacobian(lambda v: stack(v)[0], zero)[:, 0, :]   # (d_out, d_in)\n"
           "    with torch.no_grad():\n"
           "        layer = nn.Linear(d_in, J.shape[0])\n"
           "        layer.weight.copy_(J)\n"
           "        layer.bias.copy_(stack(zero)[0])\n"
           "    return layer\n",
    }),
]
