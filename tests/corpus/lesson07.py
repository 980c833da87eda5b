"""Exercise 07 (RMSNorm, masked BatchNorm with running statistics, and what one sentence's output depends on under
each norm): wrong answers a learner writes from the task text, and honest alternatives."""
from . import Honest, Mistake

_RMS = "import torch\n\ndef rms_norm(x, weight, eps=1e-6):\n"


def _bn(stats="tokens = x[real]", var="(tokens - mean).pow(2).mean(dim=0)", unbias="n / max(n - 1, 1)",
        update="self.running_mean.mul_(1 - self.momentum).add_(self.momentum * mean)",
        eval_stats="mean, var = self.running_mean, self.running_var", out="y * real.unsqueeze(-1)",
        train_test="self.training"):
    return ("import torch\nfrom torch import nn\n\n"
            "class MaskedBatchNorm(nn.Module):\n"
            "    def __init__(self, d, eps=1e-5, momentum=0.1):\n"
            "        super().__init__()\n"
            "        self.eps, self.momentum = eps, momentum\n"
            "        self.weight = nn.Parameter(torch.ones(d))\n        self.bias = nn.Parameter(torch.zeros(d))\n"
            "        self.register_buffer('running_mean', torch.zeros(d))\n"
            "        self.register_buffer('running_var', torch.ones(d))\n\n"
            "    def forward(self, x, attention_mask=None):\n"
            "        real = torch.ones(x.shape[:-1], dtype=torch.bool) if attention_mask is None else attention_mask.bool()\n"
            f"        if {train_test}:\n"
            f"            {stats}\n"
            "            n = tokens.shape[0]\n"
            "            mean = tokens.mean(dim=0)\n"
            f"            var = {var}\n"
            "            with torch.no_grad():\n"
            f"                {update}\n"
            f"                self.running_var.mul_(1 - self.momentum).add_(self.momentum * var * {unbias})\n"
            "        else:\n"
            f"            {eval_stats}\n"
            "        y = (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias\n"
            f"        return {out}\n")


def _change(rows="x.reshape(-1, x.shape[-1]) if count_padding else x[real]",
            sentence="y[0][real[0]]", reduce="(a - b).pow(2).mean().sqrt()"):
    return ("import torch\n\n"
            "predicted_changes = {'LayerNorm': {'new neighbours': False, 'more padding': False, 'alone': False}}\n\n"
            "def output_change(norm, batch_a, batch_b, count_padding=True):\n"
            "    def sentence0(x, mask):\n"
            "        real = mask.bool()\n"
            f"        rows = {rows}\n"
            "        with torch.no_grad():\n"
            "            out = norm(rows)\n"
            "        y = torch.zeros_like(x)\n"
            "        if rows.shape[0] == x.shape[0] * x.shape[1]:\n"
            "            y = out.reshape(x.shape)\n"
            "        elif rows.shape[0] == int(real.sum()):\n"
            "            y[real] = out\n"
            "        else:\n"
            "            return out\n"
            f"        return {sentence}\n"
            "    a, b = sentence0(*batch_a), sentence0(*batch_b)\n"
            f"    return float({reduce})\n")


MISTAKES = [
    Mistake("07.rms-norm", "subtracts-the-mean", {0: _RMS + "    x32 = x.float()\n    c = x32 - x32.mean(-1, keepdim=True)\n"
                                                      "    return (c / torch.sqrt(c.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)\n"},
            "does not re-centre"),
    Mistake("07.rms-norm", "eps-outside-the-root", {0: _RMS + "    x32 = x.float()\n"
                                                        "    return (x32 / (x32.pow(2).mean(-1, keepdim=True).sqrt() + eps) * weight.float()).to(x.dtype)\n"},
            "outside the square root"),
    Mistake("07.rms-norm", "half-precision-inside", {0: _RMS + "    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight\n"},
            "overflows"),
    Mistake("07.rms-norm", "l2-norm-not-rms", {0: _RMS + "    x32 = x.float()\n"
                                                   "    return (x32 / torch.sqrt(x32.pow(2).sum(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)\n"},
            "L2 norm"),
    Mistake("07.rms-dtype", "returns-float32", {0: _RMS + "    x = x.float()\n    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float()\n"},
            "dtype"),
    Mistake("07.rms-dtype", "computed-and-returned-in-float64", {0: _RMS + "    y = x.double()\n"
                                                                   "    return y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps) * weight.double()\n"},
            "dtype"),
    Mistake("07.rms-dtype", "weight-times-cast-hugging-face-style", {0: _RMS + "    h = x.float()\n"
                                                                       "    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)\n"
                                                                       "    return weight * h.to(x.dtype)\n"},
            "weight torch.float32"),
    Mistake("07.masked-bn-train", "padding-in-the-statistics", {1: _bn(stats="tokens = x.reshape(-1, x.shape[-1])")},
            "real tokens only"),
    Mistake("07.masked-bn-train", "unbiased-variance-to-normalise", {1: _bn(var="tokens.var(dim=0, unbiased=True)", unbias="1")},
            "used to normalise"),
    Mistake("07.masked-bn-train", "padding-output-not-zeroed", {1: _bn(out="y")}, "not set to 0"),
    Mistake("07.masked-bn-running", "biased-running-var", {1: _bn(unbias="1")}, "unbiased"),
    Mistake("07.masked-bn-running", "momentum-the-wrong-way", {1: _bn(update="self.running_mean.mul_(self.momentum).add_((1 - self.momentum) * mean)")},
            "momentum the wrong way"),
    Mistake("07.masked-bn-running", "eval-uses-batch-statistics", {1: _bn(train_test="True")}, "batch's own statistics"),
    Mistake("07.batch-dependence", "sentence-normalised-alone", {3: _change(rows="x[0][real[0]]")}, "by itself"),
    Mistake("07.batch-dependence", "padding-always-counted", {3: _change(rows="x.reshape(-1, x.shape[-1])")},
            "count_padding"),
    Mistake("07.batch-dependence", "largest-change-not-rms", {3: _change(reduce="(a - b).abs().max()")}, "largest"),
    Mistake("07.batch-dependence", "mean-absolute-change", {3: _change(reduce="(a - b).abs().mean()")}, "mean |change|"),
]

HONEST = [
    Honest("float64-and-masked-sums", {
        0: _RMS + "    y = x.double()\n    r = (y * y).mean(-1, keepdim=True).add(eps).rsqrt()\n    return (y * r * weight.double()).to(x.dtype)\n",
        1: "import torch\nfrom torch import nn\n\n"
           "class MaskedBatchNorm(nn.Module):\n"
           "    def __init__(self, d, eps=1e-5, momentum=0.1):\n        super().__init__()\n"
           "        self.eps, self.m = eps, momentum\n"
           "        self.weight = nn.Parameter(torch.ones(d))\n        self.bias = nn.Parameter(torch.zeros(d))\n"
           "        self.register_buffer('running_mean', torch.zeros(d))\n        self.register_buffer('running_var', torch.ones(d))\n\n"
           "    def forward(self, x, attention_mask=None):\n"
           "        w = torch.ones(x.shape[:-1]) if attention_mask is None else attention_mask.to(x.dtype)\n"
           "        w = w.unsqueeze(-1)\n"
           "        if self.training:\n"
           "            n = w.sum()\n            mean = (x * w).sum((0, 1)) / n\n"
           "            var = (((x - mean) ** 2) * w).sum((0, 1)) / n\n"
           "            self.running_mean = (1 - self.m) * self.running_mean + self.m * mean.detach()\n"
           "            self.running_var = (1 - self.m) * self.running_var + self.m * var.detach() * n / (n - 1)\n"
           "        else:\n            mean, var = self.running_mean, self.running_var\n"
           "        return ((x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias) * w\n",
        3: "import torch\n\n"
           "predicted_changes = {   # some of these guesses are wrong: predictions are shown, not graded\n"
           "    'LayerNorm': {'new neighbours': False, 'more padding': False, 'alone': False},\n"
           "    'BatchNorm, train mode': {'new neighbours': True, 'more padding': True, 'alone': True},\n"
           "    'BatchNorm, train mode, real tokens only': {'new neighbours': True, 'more padding': True, 'alone': True},\n"
           "    'BatchNorm, eval mode': {'new neighbours': True, 'more padding': True, 'alone': True}}\n\n"
           "def output_change(norm, batch_a, batch_b, count_padding=True):\n"
           "    outs = []\n"
           "    for x, mask in (batch_a, batch_b):\n"
           "        B, T, d = x.shape\n"
           "        keep = torch.ones(B * T, dtype=torch.bool) if count_padding else mask.reshape(-1).bool()\n"
           "        flat = x.reshape(B * T, d)\n"
           "        normed = norm(flat[keep]).detach()\n"
           "        index = torch.arange(B * T)[keep]                 # where each normalised row came from\n"
           "        n0 = int(mask[0].sum())\n"
           "        outs.append(normed[(index < n0)])                 # row 0's first n0 positions\n"
           "    diff = outs[0] - outs[1]\n"
           "    return (diff.norm() / diff.numel() ** 0.5).item()\n"}),
    Honest("helper-and-where", {
        0: "import torch\n\ndef _inv_rms(t, eps):\n    return 1.0 / torch.sqrt(torch.mean(t ** 2, dim=-1, keepdim=True) + eps)\n\n"
           + _RMS + "    t = x.to(torch.float32)\n    return (t * _inv_rms(t, eps) * weight.to(torch.float32)).to(x.dtype)\n",
        1: _bn(stats="tokens = x.reshape(-1, x.shape[-1])[real.reshape(-1)]",
               var="tokens.var(dim=0, unbiased=False)",
               out="torch.where(real.unsqueeze(-1), y, torch.zeros_like(y))"),
        3: "import math\nimport torch\n\n"
           "predicted_changes = {'LayerNorm': {'new neighbours': False, 'more padding': False, 'alone': False},\n"
           "                     'BatchNorm, train mode': {'new neighbours': True, 'more padding': True, 'alone': True},\n"
           "                     'BatchNorm, train mode, real tokens only': {'new neighbours': True, 'more padding': False, 'alone': True},\n"
           "                     'BatchNorm, eval mode': {'new neighbours': False, 'more padding': False, 'alone': False}}\n\n"
           "def _sentence0(norm, x, mask, count_padding):\n"
           "    rows = []\n"
           "    for b in range(x.shape[0]):\n"
           "        for t in range(x.shape[1]):\n"
           "            if count_padding or mask[b, t]:\n"
           "                rows.append((b, t, x[b, t]))\n"
           "    with torch.no_grad():\n"
           "        out = norm(torch.stack([r[2] for r in rows]))\n"
           "    return torch.stack([o for (b, t, _), o in zip(rows, out) if b == 0 and mask[0, t]])\n\n"
           "def output_change(norm, batch_a, batch_b, count_padding=True):\n"
           "    a = _sentence0(norm, *batch_a, count_padding)\n"
           "    b = _sentence0(norm, *batch_b, count_padding)\n"
           "    return math.sqrt(((a - b) ** 2).sum().item() / a.numel())\n"}),
]
