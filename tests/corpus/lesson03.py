"""Exercise 03 (grouped-query attention; two lookups wired by hand through one shared key/value head):
wrong answers a learner writes, and honest alternatives.

Answer cells: 0 repeat_kv, 1 GroupedQueryAttention, 2 two_lookups_state, 3 the written answer."""
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
            "    def forward(self, x):\n"
            f"        {keys}\n"
            "        n_rep = self.n_heads // self.n_kv_heads\n"
            "        q = split_heads(self.q_proj(x), self.n_heads)\n"
            f"        k, v = ({rep} for t in (keys, values))\n"
            "        out, weights = scaled_dot_product_attention(q, k, v)\n"
            f"        return {out}, weights\n")


def _two(c="10.0 * math.sqrt(n)", shift="wq[torch.arange(n - 1), n + torch.arange(1, n)] = c",
         bq="bq[n + 0] = c", key="wkv[:n, position] = torch.eye(n)", out="torch.eye(d)"):
    return {2: "import math\nimport torch\n\ndef two_lookups_state(n):\n"
            f"    d, c = 2 * n, {c}\n"
            "    token, position = slice(0, n), slice(n, d)\n"
            "    wq, bq = torch.zeros(d, d), torch.zeros(d)\n"
            f"    {shift}\n"
            f"    {bq}\n"
            "    wkv, bkv = torch.zeros(d, d), torch.zeros(d)\n"
            f"    {key}\n"
            "    wkv[n:, token] = torch.eye(n)\n"
            "    return {'q_proj.weight': wq, 'q_proj.bias': bq, 'kv_proj.weight': wkv, 'kv_proj.bias': bkv,\n"
            f"            'out_proj.weight': {out}, 'out_proj.bias': torch.zeros(d)}}\n"}


MISTAKES = [
    Mistake("03.repeat-kv", "tile-instead-of-interleave", {0: _REP + "    return x.repeat(1, n_rep, 1, 1)\n"}, "(tiled)"),
    Mistake("03.repeat-kv", "repeats-along-time", {0: _REP + "    return x.repeat_interleave(n_rep, dim=2)\n"}, "shape"),
    Mistake("03.repeat-kv", "view-without-expand", {0: _REP + "    B, h, T, d = x.shape\n"
                                                        "    return x.expand(B, h * n_rep, T, d) if h == 1 else x\n"}, "expected (1, 6, 3, 4)"),
    Mistake("03.gqa-forward", "kv-projection-as-wide-as-queries", {1: _gqa(kv_out="2 * d_model")}, "kv_proj"),
    Mistake("03.gqa-forward", "groups-tiled", {1: _gqa(rep="split_heads(t, self.n_kv_heads).repeat(1, n_rep, 1, 1)")},
            "groups tiled"),
    Mistake("03.gqa-forward", "values-before-keys", {1: _gqa(keys="values, keys = self.kv_proj(x).chunk(2, dim=-1)")},
            "keys and values swapped"),
    Mistake("03.gqa-forward", "no-output-projection", {1: _gqa(out="merge_heads(out)")}, "without out_proj"),
    Mistake("03.gqa-forward", "scaled-by-d-model", {1: _gqa().replace(
        "        out, weights = scaled_dot_product_attention(q, k, v)\n",
        "        import math\n        s = q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1])\n"
        "        weights = s.softmax(-1)\n        out = weights @ v\n")}, "scaled by 1/√d_model"),
    # 03.gqa-conformance
    Mistake("03.gqa-conformance", "no-divisibility-check", {1: _gqa(init_check="")}, "ValueError"),
    Mistake("03.gqa-conformance", "checks-d-model-only", {1: _gqa(
        init_check="        if d_model % n_heads:\n            raise ValueError('heads')\n")}, "cannot be shared"),
    Mistake("03.gqa-conformance", "assert-instead", {1: _gqa(
        init_check="        assert d_model % n_heads == 0 and n_heads % n_kv_heads == 0\n")}, "AssertionError"),
    Mistake("03.gqa-conformance", "refuses-multi-query", {1: _gqa(
        init_check="        if d_model % n_heads or n_heads % n_kv_heads or n_kv_heads == 1:\n"
                   "            raise ValueError('heads')\n")}, "a valid configuration"),
    # 03.two-lookups: the wiring
    Mistake("03.two-lookups", "both-heads-ask-the-same", _two(bq="bq[n + 0] = 0.0\n    wq[n + torch.arange(n - 1), n + torch.arange(1, n)] = c"),
            "look at the same place"),
    Mistake("03.two-lookups", "halves-swapped", _two(out="torch.eye(d).roll(n, 0)"), "each other's halves"),
    Mistake("03.two-lookups", "no-shift", _two(shift="wq[torch.arange(n), n + torch.arange(n)] = c"),
            "the position itself"),
    Mistake("03.two-lookups", "no-margin", _two(c="1.0"), "of their weight on position"),
    Mistake("03.two-lookups", "key-is-the-token", _two(key="wkv[:n, token] = torch.eye(n)"), "previous token is"),
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
           "    def forward(self, x):\n"
           "        B, T, _ = x.shape\n        r = self.h // self.g\n"
           "        q = self.q_proj(x).view(B, T, self.g, r, self.d)\n"
           "        k, v = self.kv_proj(x).view(B, T, 2, self.g, self.d).unbind(2)\n"
           "        s = torch.einsum('btgrd,bsgd->bgrts', q, k) / math.sqrt(self.d)\n"
           "        s = s.reshape(B, self.h, T, T)\n"
           "        w = s.softmax(-1)\n"
           "        out = torch.einsum('bgrts,bsgd->btgrd', w.view(B, self.g, r, T, T), v).reshape(B, T, -1)\n"
           "        return self.out_proj(out), w\n",
        2: "import torch\n\ndef two_lookups_state(n):\n"
           "    layer = GroupedQueryAttention(2 * n, 2, 1)      # my class from Task 2, roles swapped\n"
           "    with torch.no_grad():\n"
           "        for p in layer.parameters():\n            p.zero_()\n"
           "        layer.q_proj.bias[0] = 40.0                     # head 0: position 0\n"
           "        for t in range(1, n):\n"
           "            layer.q_proj.weight[n + t - 1, n + t] = 40.0  # head 1: position t - 1\n"
           "        layer.kv_proj.weight[:n, n:] = torch.eye(n)\n"
           "        layer.kv_proj.weight[n:, :n] = torch.eye(n)\n"
           "        layer.out_proj.weight[:n, n:] = torch.eye(n)    # head 1 (previous) -> first half\n"
           "        layer.out_proj.weight[n:, :n] = torch.eye(n)    # head 0 (first token) -> second half\n"
           "    return layer\n"}),
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
           "        return self.out_proj(out.permute(0, 2, 1, 3).reshape(B, T, H * D)), w\n",
        2: "import torch\n\ndef two_lookups_state(n):\n"
           "    d = 2 * n\n"
           "    shift = torch.diag(torch.ones(n - 1), 1)                 # e_t -> e_(t-1)\n"
           "    q = torch.zeros(d, d, dtype=torch.float64)\n"
           "    q[:n, n:] = 8.0 * shift\n"
           "    k = torch.zeros(d, d, dtype=torch.float64)\n"
           "    k[:n, n:] = 2.0 * torch.eye(n)                          # keys: 2 x position\n"
           "    k[n:, :n] = 3.0 * torch.eye(n)                          # values: 3 x token\n"
           "    bq = torch.zeros(d, dtype=torch.float64)\n"
           "    bq[n] = 8.0\n"
           "    bkv = torch.cat([torch.zeros(n), torch.full((n,), 0.5)]).double()   # a constant on every value\n"
           "    return {'q_proj.weight': q, 'q_proj.bias': bq, 'kv_proj.weight': k, 'kv_proj.bias': bkv,\n"
           "            'out_proj.weight': torch.eye(d, dtype=torch.float64), 'out_proj.bias': torch.ones(d).double()}\n"}),
]
