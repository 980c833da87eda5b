"""Exercise 08 (gated residual: ReZero and LayerScale): wrong answers a learner writes, and honest alternatives."""
from . import Honest, Mistake


def _gated(gate="nn.Parameter(torch.full(() if d is None else (d,), float(init)))", out="x + self.gate * self.sublayer(x)"):
    return ("import torch\nfrom torch import nn\n\n"
            "class GatedResidual(nn.Module):\n"
            "    def __init__(self, sublayer, d=None, init=0.0):\n"
            "        super().__init__()\n"
            "        self.sublayer = sublayer\n"
            f"        self.gate = {gate}\n\n"
            "    def forward(self, x):\n"
            f"        return {out}\n")


MISTAKES = [
    Mistake("08.rezero", "gate-scales-the-sum", {0: _gated(out="self.gate * (x + self.sublayer(x))")}, "branch only"),
    Mistake("08.rezero", "gate-on-the-input", {0: _gated(out="x + self.sublayer(self.gate * x)")}, "sublayer's input"),
    Mistake("08.rezero", "gate-detached", {0: _gated(out="x + self.gate.detach() * self.sublayer(x)")}, "gate"),
    Mistake("08.rezero", "plain-float-gate", {0: _gated(gate="float(init) if d is None else torch.full((d,), float(init))")},
            "nn.Parameter"),
    Mistake("08.rezero-init", "gate-starts-at-one", {0: _gated(gate="nn.Parameter(torch.ones(() if d is None else (d,)))")},
            "starts at 0"),
    Mistake("08.rezero-init", "ignores-init", {0: _gated(gate="nn.Parameter(torch.zeros(() if d is None else (d,)))")}, "init"),
    Mistake("08.rezero-init", "gate-of-shape-one", {0: _gated(gate="nn.Parameter(torch.full((1,) if d is None else (d,), float(init)))")},
            "shape ()"),
    Mistake("08.layerscale", "scalar-even-with-d", {0: _gated(gate="nn.Parameter(torch.tensor(float(init)))")}, "shape"),
    Mistake("08.layerscale", "per-channel-column", {0: _gated(gate="nn.Parameter(torch.full(() if d is None else (d, 1), float(init)))")},
            "shape"),
    Mistake("08.layerscale", "layerscale-on-the-sum", {0: _gated(out="(x + self.sublayer(x)) * self.gate if self.gate.dim() else x + self.gate * self.sublayer(x)")},
            "branch only"),
]

HONEST = [
    Honest("separate-branches-and-mul", {0: "import torch\nfrom torch import nn\n\n"
                                            "class GatedResidual(nn.Module):\n"
                                            "    def __init__(self, sublayer, d=None, init=0.0):\n"
                                            "        super().__init__()\n"
                                            "        self.sublayer = sublayer\n"
                                            "        if d is None:\n            self.gate = nn.Parameter(torch.tensor(init, dtype=torch.float32))\n"
                                            "        else:\n            self.gate = nn.Parameter(init * torch.ones(d))\n\n"
                                            "    def forward(self, x):\n"
                                            "        return torch.add(x, torch.mul(self.sublayer(x), self.gate))\n"}),
    Honest("helper-and-float64", {0: "import torch\nfrom torch import nn\n\n"
                                     "def _gate_shape(d):\n    return torch.Size([]) if d is None else torch.Size([d])\n\n"
                                     "class GatedResidual(nn.Module):\n"
                                     "    def __init__(self, sublayer, d=None, init=0.0):\n"
                                     "        super().__init__()\n"
                                     "        self.add_module('sublayer', sublayer)\n"
                                     "        self.register_parameter('gate', nn.Parameter(torch.empty(_gate_shape(d)).fill_(init)))\n\n"
                                     "    def forward(self, x):\n"
                                     "        branch = self.sublayer(x).double() * self.gate.double()\n"
                                     "        return (x.double() + branch).to(x.dtype)\n"}),
]
