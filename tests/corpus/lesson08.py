"""Exercise 08 (the first block's gradient with and without the identity path: predict, measure; ReZero's gate):
wrong answers a learner writes from the task text, and honest alternatives.

Answer cells: 0 the prediction, 1 `block_gradient_norms`, 2 `GatedResidual`, 3 the written answer."""
from . import Honest, Mistake

_HEAD = "def block_gradient_norms(branches, x, upstream, residual):\n"
_FORWARD = ("    h = x\n"
            "    for branch in branches:\n"
            "        h = h + branch(h) if residual else branch(h)\n")
_NORMS = ("    out = []\n"
          "    for branch in branches:\n"
          "        out.append(sum(p.grad.pow(2).sum() for p in branch.parameters()).sqrt().item())\n"
          "    return out\n")


def _norms(forward=_FORWARD, loss="(h * upstream).sum()", zero="    branches.zero_grad()\n", norms=_NORMS):
    return _HEAD + zero + forward + f"    ({loss}).backward()\n" + norms


def _gate(gate="nn.Parameter(torch.zeros(1))", out="x + self.gate * self.sublayer(x)", store="self.sublayer = sublayer"):
    return ("class GatedResidual(nn.Module):\n"
            "    def __init__(self, sublayer):\n"
            "        super().__init__()\n"
            f"        {store}\n"
            f"        self.gate = {gate}\n\n"
            "    def forward(self, x):\n"
            f"        return {out}\n")


MISTAKES = [
    # the measurement
    Mistake("08.gradients", "residual-flag-ignored",
            {1: _norms(forward="    h = x\n    for branch in branches:\n        h = h + branch(h)\n")},
            "with the identity path"),
    Mistake("08.gradients", "last-block-first",
            {1: _norms(norms="    out = [sum(p.grad.pow(2).sum() for p in b.parameters()).sqrt().item() for b in branches]\n"
                             "    return out[::-1]\n")},
            "reverse order"),
    Mistake("08.gradients", "weights-only",
            {1: _norms(norms="    return [b_norm for b_norm in (sum(p.grad.pow(2).sum() for p in b.parameters() if p.dim() == 2)"
                             ".sqrt().item() for b in branches)]\n")},
            "weight matrices only"),
    Mistake("08.gradients", "gradients-never-zeroed",
            {1: _norms(zero="")}, "zero them first"),
    Mistake("08.gradients", "loss-without-upstream",
            {1: _norms(loss="h.sum()")}, "upstream"),
    Mistake("08.gradients", "squared-norms",
            {1: _norms(norms="    return [sum(p.grad.pow(2).sum() for p in b.parameters()).item() for b in branches]\n")},
            "square root"),
    Mistake("08.gradients", "activation-gradients",
            {1: _HEAD + "    hs = [x.clone().requires_grad_(True)]\n"
                        "    for branch in branches:\n"
                        "        hs.append(hs[-1] + branch(hs[-1]) if residual else branch(hs[-1]))\n"
                        "    grads = torch.autograd.grad((hs[-1] * upstream).sum(), hs[:-1])\n"
                        "    return [g.norm().item() for g in grads]\n"},
            "activations"),
    # the prediction
    Mistake("08.prediction", "the-lessons-factor", {0: "predicted_log10_ratio = 23 / 2 * math.log10((1 / 6) / (7 / 6))\n"},
            "lesson's factor"),
    Mistake("08.prediction", "no-square-root", {0: "predicted_log10_ratio = 23 * math.log10((1 / 18) / (19 / 18))\n"},
            "square root"),
    Mistake("08.prediction", "residual-gets-less", {0: "predicted_log10_ratio = 15\n"}, "plain stack's first block gets"),
    Mistake("08.prediction", "ratio-not-log", {0: "predicted_log10_ratio = 1e-15\n"}, "ratio itself"),
    Mistake("08.prediction", "no-relu-halving", {0: "predicted_log10_ratio = 23 / 2 * math.log10((1 / 9) / (10 / 9))\n"},
            "ReLU"),
    Mistake("08.prediction", "about-equal", {0: "predicted_log10_ratio = -1\n"}, "not within 1.5"),
    # ReZero's gate
    Mistake("08.gate", "gate-scales-the-sum", {2: _gate(out="self.gate * (x + self.sublayer(x))")}, "whole sum"),
    Mistake("08.gate", "gate-on-the-input", {2: _gate(out="x + self.sublayer(self.gate * x)")}, "not its input"),
    Mistake("08.gate", "gate-starts-at-one", {2: _gate(gate="nn.Parameter(torch.ones(1))")}, "starts at 1"),
    Mistake("08.gate", "gate-not-a-parameter", {2: _gate(gate="torch.zeros(1)")}, "nn.Parameter"),
    Mistake("08.gate", "gate-detached", {2: _gate(out="x + self.gate.detach() * self.sublayer(x)")}, "no gradient reached the gate"),
    Mistake("08.gate", "column-gate", {2: "class GatedResidual(nn.Module):\n"
                                           "    def __init__(self, sublayer):\n"
                                           "        super().__init__()\n"
                                           "        self.sublayer = sublayer\n"
                                           "        d = next(sublayer.parameters()).shape[-1]\n"
                                           "        self.gate = nn.Parameter(torch.zeros(d, 1))\n\n"
                                           "    def forward(self, x):\n"
                                           "        return x + self.gate * self.sublayer(x)\n"}, "does not broadcast"),
    Mistake("08.gate", "sublayer-not-registered",
            {2: _gate(store="self.__dict__['sublayer'] = sublayer")}, "sublayer's parameters are not among"),
]

HONEST = [
    Honest("backward-zero-grad-and-a-scalar-gate", {
        0: "predicted_log10_ratio = -15   # about 1/19 per block in squared norm, over 23 blocks: 10^(-23/2 * 1.28)\n",
        1: _norms(zero="    for p in branches.parameters():\n        p.grad = None\n"),
        2: _gate(gate="nn.Parameter(torch.tensor(0.0))"),
    }),
    Honest("float64-and-a-per-channel-gate", {
        0: "import math\nfactor = (1 / 3) * (1 / 2) * (1 / 3)\npredicted_log10_ratio = 0.5 * 23 * (math.log10(factor) - math.log10(1 + factor))\n",
        1: "import torch\n\n"
           "def block_gradient_norms(branches, x, upstream, residual):\n"
           "    params = [list(b.parameters()) for b in branches]\n"
           "    flat = [p for ps in params for p in ps]\n"
           "    h = x\n"
           "    for branch in branches:\n"
           "        branch_out = branch(h)\n"
           "        h = (h + branch_out) if residual else branch_out\n"
           "    grads = iter(torch.autograd.grad(torch.dot(h.flatten(), upstream.flatten()), flat))\n"
           "    # the sum of squares in float64: the plain stack's first norms are tiny\n"
           "    return torch.tensor([torch.cat([next(grads).double().flatten() for _ in ps]).norm().item() for ps in params],\n"
           "                        dtype=torch.float64)\n",
        2: "import torch\nfrom torch import nn\n\n"
           "class GatedResidual(nn.Module):\n"
           "    def __init__(self, sublayer):\n"
           "        super().__init__()\n"
           "        self.sublayer = sublayer\n"
           "        width = [p for p in sublayer.parameters()][-1].shape[0]\n"
           "        self.alpha = nn.Parameter(torch.zeros(width))   # one gate per channel (LayerScale at 0)\n\n"
           "    def forward(self, x):\n"
           "        branch = self.sublayer(x)\n"
           "        return torch.addcmul(x, self.alpha, branch)\n",
    }),
    Honest("list-of-norms-and-rezero-resweight", {
        1: "import torch\n\n"
           "def block_gradient_norms(branches, x, upstream, residual):\n"
           "    h = x\n"
           "    for i in range(len(branches)):\n"
           "        if residual:\n"
           "            h = h + branches[i](h)\n"
           "        else:\n"
           "            h = branches[i](h)\n"
           "    loss = torch.sum(h * upstream)\n"
           "    norms = []\n"
           "    for branch in branches:\n"
           "        gs = torch.autograd.grad(loss, tuple(branch.parameters()), retain_graph=True)\n"
           "        norms.append(float(sum((g ** 2).sum() for g in gs) ** 0.5))\n"
           "    return norms\n",
        2: "class GatedResidual(nn.Module):\n"
           "    def __init__(self, sublayer):\n"
           "        super().__init__()\n"
           "        self.fn = sublayer\n"
           "        self.resweight = nn.Parameter(torch.Tensor([0]))   # ReZero's code\n\n"
           "    def forward(self, x):\n"
           "        return x + self.fn(x) * self.resweight\n",
    }),
]
