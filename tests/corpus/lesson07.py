"""Exercise 07 (RMSNorm and masked BatchNorm with running statistics): wrong answers and honest alternatives."""
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


MISTAKES = [
    Mistake("07.rms-norm", "subtracts-the-mean", {0: _RMS + "    x32 = x.float()\n    c = x32 - x32.mean(-1, keepdim=True)\n"
                                                      "    return (c / torch.sqrt(c.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)\n"},
            "does not subtract the mean"),
    Mistake("07.rms-norm", "eps-outside-the-root", {0: _RMS + "    x32 = x.float()\n"
                                                        "    return (x32 / (x32.pow(2).mean(-1, keepdim=True).sqrt() + eps) * weight.float()).to(x.dtype)\n"},
            "inside the square root"),
    Mistake("07.rms-norm", "half-precision-inside", {0: _RMS + "    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight\n"},
            "overflows"),
    Mistake("07.rms-norm", "l2-norm-not-rms", {0: _RMS + "    x32 = x.float()\n"
                                                   "    return (x32 / torch.sqrt(x32.pow(2).sum(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)\n"},
            "differs from the reference"),
    Mistake("07.rms-norm", "returns-float32", {0: _RMS + "    x = x.float()\n    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.float()\n"},
            "dtype"),
    Mistake("07.masked-bn-train", "padding-in-the-statistics", {1: _bn(stats="tokens = x.reshape(-1, x.shape[-1])")},
            "real tokens only"),
    Mistake("07.masked-bn-train", "unbiased-variance-to-normalise", {1: _bn(var="tokens.var(dim=0, unbiased=True)", unbias="1")},
            "differs from the reference"),
    Mistake("07.masked-bn-train", "padding-output-not-zeroed", {1: _bn(out="y")}, "padding outputs 0"),
    Mistake("07.masked-bn-running", "biased-running-var", {1: _bn(unbias="1")}, "unbiased"),
    Mistake("07.masked-bn-running", "momentum-the-wrong-way", {1: _bn(update="self.running_mean.mul_(self.momentum).add_((1 - self.momentum) * mean)")},
            "running_mean"),
    Mistake("07.masked-bn-running", "eval-uses-batch-statistics", {1: _bn(train_test="True")}, "eval()"),
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
           "        return ((x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias) * w\n"}),
    Honest("helper-and-where", {
        0: "import torch\n\ndef _inv_rms(t, eps):\n    return 1.0 / torch.sqrt(torch.mean(t ** 2, dim=-1, keepdim=True) + eps)\n\n"
           + _RMS + "    t = x.to(torch.float32)\n    return (t * _inv_rms(t, eps) * weight.to(torch.float32)).to(x.dtype)\n",
        1: _bn(stats="tokens = x.reshape(-1, x.shape[-1])[real.reshape(-1)]",
               var="tokens.var(dim=0, unbiased=False)",
               out="torch.where(real.unsqueeze(-1), y, torch.zeros_like(y))")}),
]
