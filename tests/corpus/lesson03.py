"""Exercise 03 (grouped-query attention): wrong answers a learner writes, and honest alternatives."""
from . import Honest, Mistake

_REP = "import torch\n\ndef repeat_kv(x, n_rep):\n"


def _gqa(init_check="        if d_model % n_heads or n_heads % n_kv_heads:\n            raise ValueError('heads')\n",
         kv_out="2 * n_kv_heads * head_dim", keys="keys, values = self.kv_proj(x).chunk(2, dim=-1)",
         rep="repeat_kv(split_heads(t, self.n_kv_heads), n_rep)", out="self.out_proj(merge_heads(out))"):
    return ("import torch\nfrom torch import nn\n\n"
            "class GroupedQueryAttention(nn.Module):\n"
            "    def __init__(self, d_model, n_heads, n_kv_heads):\n"
            "        super().__init__()\n" + init_check +
            "        head_dim = d_model // n_heads\n"
            "        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads\n"
            "        self.q_proj = nn.Linear(d_model, d_model)\n"
            f"        self.kv_proj = nn.Linear(d_model, {kv_out})\n"
            "        self.out_proj = nn.Linear(d_model, d_model)\n\n"
            "    def forward(self, x, mask=None):\n"
            f"        {keys}\n"
            "        n_rep = self.n_heads // self.n_kv_heads\n"
            "        q = split_heads(self.q_proj(x), self.n_heads)\n"
            f"        k, v = ({rep} for t in (keys, values))\n"
            "        out, weights = scaled_dot_product_attention(q, k, v, mask)\n"
            f"        return {out}, weights\n")


MISTAKES = [
    Mistake("03.repeat-kv", "tile-instead-of-interleave", {0: _REP + "    return x.repeat(1, n_rep, 1, 1)\n"}, "j // n_rep"),
    Mistake("03.repeat-kv", "repeats-along-time", {0: _REP + "    return x.repeat_interleave(n_rep, dim=2)\n"}, "shape"),
    Mistake("03.repeat-kv", "view-without-expand", {0: _REP + "    B, h, T, d = x.shape\n"
                                                        "    return x.expand(B, h * n_rep, T, d) if h == 1 else x\n"}, "n_rep=3"),
    Mistake("03.gqa-forward", "kv-projection-as-wide-as-queries", {1: _gqa(kv_out="2 * d_model")}, "kv_proj"),
    Mistake("03.gqa-forward", "groups-tiled", {1: _gqa(rep="split_heads(t, self.n_kv_heads).repeat(1, n_rep, 1, 1)")},
            "differs from the reference"),
    Mistake("03.gqa-forward", "values-before-keys", {1: _gqa(keys="values, keys = self.kv_proj(x).chunk(2, dim=-1)")},
            "differs from the reference"),
    Mistake("03.gqa-forward", "no-divisibility-check", {1: _gqa(init_check="")}, "ValueError"),
    Mistake("03.gqa-forward", "no-output-projection", {1: _gqa(out="merge_heads(out)")}, "output"),
    Mistake("03.gqa-masked", "mask-ignored", {1: _gqa().replace("scaled_dot_product_attention(q, k, v, mask)",
                                                               "scaled_dot_product_attention(q, k, v)")}, "may attend"),
    Mistake("03.gqa-masked", "mask-inverted", {1: _gqa().replace("scaled_dot_product_attention(q, k, v, mask)",
                                                                "scaled_dot_product_attention(q, k, v, None if mask is None else ~mask)")},
            "may attend"),
    Mistake("03.gqa-masked", "minus-inf-softmax-nan", {1: _gqa().replace(
        "        out, weights = scaled_dot_product_attention(q, k, v, mask)\n",
        "        import math\n        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
        "        if mask is not None:\n            s = s.masked_fill(~mask, float('-inf'))\n"
        "        weights = s.softmax(-1)\n        out = weights @ v\n")}, "every key masked"),
]

HONEST = [
    Honest("grouped-einsum-no-repeat", {
        0: _REP + "    return torch.repeat_interleave(x, n_rep, dim=1)\n",
        1: "import math\nimport torch\nfrom torch import nn\n\n"
           "class GroupedQueryAttention(nn.Module):\n"
           "    def __init__(self, d_model, n_heads, n_kv_heads):\n        super().__init__()\n"
           "        if d_model % n_heads != 0 or n_heads % n_kv_heads != 0:\n            raise ValueError('bad head counts')\n"
           "        self.h, self.g, self.d = n_heads, n_kv_heads, d_model // n_heads\n"
           "        self.q_proj = nn.Linear(d_model, d_model)\n"
           "        self.kv_proj = nn.Linear(d_model, 2 * self.g * self.d)\n"
           "        self.out_proj = nn.Linear(d_model, d_model)\n\n"
           "    def forward(self, x, mask=None):\n"
           "        B, T, _ = x.shape\n        r = self.h // self.g\n"
           "        q = self.q_proj(x).view(B, T, self.g, r, self.d)\n"
           "        k, v = self.kv_proj(x).view(B, T, 2, self.g, self.d).unbind(2)\n"
           "        s = torch.einsum('btgrd,bsgd->bgrts', q, k) / math.sqrt(self.d)\n"
           "        s = s.reshape(B, self.h, T, T)\n"
           "        if mask is not None:\n            s = s.masked_fill(~mask, float('-inf'))\n"
           "        w = torch.nan_to_num(s.softmax(-1))\n"
           "        out = torch.einsum('bgrts,bsgd->btgrd', w.view(B, self.g, r, T, T), v).reshape(B, T, -1)\n"
           "        return self.out_proj(out), w\n"}),
    Honest("loop-over-groups-helper", {
        0: _REP + "    heads = []\n    for h in range(x.shape[1]):\n        heads += [x[:, h]] * n_rep\n"
               "    return torch.stack(heads, dim=1)\n",
        1: "import torch\nfrom torch import nn\n\n"
           "def _heads(t, n):\n    B, T, D = t.shape\n    return t.reshape(B, T, n, D // n).permute(0, 2, 1, 3)\n\n"
           "class GroupedQueryAttention(nn.Module):\n"
           "    def __init__(self, d_model, n_heads, n_kv_heads):\n        super().__init__()\n"
           "        if d_model % n_heads or n_heads % n_kv_heads:\n            raise ValueError('heads')\n"
           "        self.n_heads, self.n_kv = n_heads, n_kv_heads\n"
           "        self.q_proj = nn.Linear(d_model, d_model)\n"
           "        self.kv_proj = nn.Linear(d_model, 2 * (d_model // n_heads) * n_kv_heads)\n"
           "        self.out_proj = nn.Linear(d_model, d_model)\n\n"
           "    def forward(self, x, mask=None):\n"
           "        kv = self.kv_proj(x)\n        half = kv.shape[-1] // 2\n"
           "        k = repeat_kv(_heads(kv[..., :half], self.n_kv), self.n_heads // self.n_kv)\n"
           "        v = repeat_kv(_heads(kv[..., half:], self.n_kv), self.n_heads // self.n_kv)\n"
           "        out, w = scaled_dot_product_attention(_heads(self.q_proj(x), self.n_heads), k, v, mask)\n"
           "        B, H, T, D = out.shape\n"
           "        return self.out_proj(out.permute(0, 2, 1, 3).reshape(B, T, H * D)), w\n"}),
]
