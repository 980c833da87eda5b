"""Exercise 06 (token + position embedding with padding): wrong answers a learner writes, and honest alternatives."""
from . import Honest, Mistake


def _emb(init="torch.randn(vocab_size, d_model) / math.sqrt(d_model)", zero_row="        table[padding_idx] = 0.0\n",
         pe='self.register_buffer("pe", sinusoidal_table(max_len, d_model))',
         check="        if start + T > self.pe.shape[0]:\n            raise ValueError('too long')\n",
         tokens="self.weight[input_ids] * (input_ids != self.padding_idx).unsqueeze(-1) * math.sqrt(self.d)",
         out="tokens + self.pe[start:start + T]"):
    return ("import math\nimport torch\nfrom torch import nn\n\n"
            "class TokenAndPositionEmbedding(nn.Module):\n"
            "    def __init__(self, vocab_size, d_model, max_len, padding_idx=0):\n"
            "        super().__init__()\n"
            "        self.padding_idx, self.d = padding_idx, d_model\n"
            f"        table = {init}\n" + zero_row +
            "        self.weight = nn.Parameter(table)\n"
            f"        {pe}\n\n"
            "    def forward(self, input_ids, start=0):\n"
            "        T = input_ids.shape[-1]\n" + check +
            f"        tokens = {tokens}\n"
            f"        return {out}\n")


MISTAKES = [
    Mistake("06.embed-forward", "no-sqrt-d", {0: _emb(tokens="self.weight[input_ids] * (input_ids != self.padding_idx).unsqueeze(-1)")},
            "√d_model"),
    Mistake("06.embed-forward", "scales-the-sum", {0: _emb(tokens="self.weight[input_ids] * (input_ids != self.padding_idx).unsqueeze(-1)",
                                                      out="(tokens + self.pe[start:start + T]) * math.sqrt(self.d)")},
            "not the sum"),
    Mistake("06.embed-forward", "ignores-start", {0: _emb(out="tokens + self.pe[:T]")}, "start="),
    Mistake("06.embed-forward", "detached-lookup", {0: _emb(tokens="self.weight.detach()[input_ids] * (input_ids != self.padding_idx).unsqueeze(-1) * math.sqrt(self.d)")},
            "autograd"),
    Mistake("06.embed-padding", "nn-embedding-padding-idx", {0: _emb(
        tokens="nn.functional.embedding(input_ids, self.weight, padding_idx=self.padding_idx) * math.sqrt(self.d)")},
            "position vector only"),
    Mistake("06.embed-padding", "positions-zeroed-too", {0: _emb(
        out="(tokens + self.pe[start:start + T]) * (input_ids != self.padding_idx).unsqueeze(-1)")}, "padding"),
    Mistake("06.embed-padding", "output-zeroed-but-gradient-leaks", {0: _emb(
        tokens="self.weight[input_ids] * math.sqrt(self.d) - self.weight[input_ids].detach() * math.sqrt(self.d) * (input_ids == self.padding_idx).unsqueeze(-1)")},
            "received a gradient"),
    Mistake("06.embed-setup", "unit-variance-init", {0: _emb(init="torch.randn(vocab_size, d_model)")}, "std"),
    Mistake("06.embed-setup", "trainable-positions", {0: _emb(pe="self.pe = nn.Parameter(sinusoidal_table(max_len, d_model))")},
            "buffer"),
    Mistake("06.embed-setup", "padding-row-not-zeroed", {0: _emb(zero_row="")}, "start at zero"),
    Mistake("06.embed-setup", "no-max-len-check", {0: _emb(check="")}, "ValueError"),
]

HONEST = [
    Honest("nn-embedding-and-where", {0: "import math\nimport torch\nfrom torch import nn\nimport torch.nn.functional as F\n\n"
                                         "class TokenAndPositionEmbedding(nn.Module):\n"
                                         "    def __init__(self, vocab_size, d_model, max_len, padding_idx=0):\n"
                                         "        super().__init__()\n"
                                         "        self.p = padding_idx\n"
                                         "        self.weight = nn.Parameter(torch.empty(vocab_size, d_model).normal_(0, d_model ** -0.5))\n"
                                         "        with torch.no_grad():\n            self.weight[padding_idx].zero_()\n"
                                         "        self.register_buffer('pe', sinusoidal_table(max_len, d_model), persistent=False)\n\n"
                                         "    def forward(self, input_ids, start=0):\n"
                                         "        T = input_ids.size(1)\n"
                                         "        if start + T > len(self.pe):\n            raise ValueError(f'start + T = {start + T} > max_len')\n"
                                         "        e = F.embedding(input_ids, self.weight) * self.weight.shape[1] ** 0.5\n"
                                         "        e = torch.where((input_ids == self.p)[..., None], torch.zeros_like(e), e)\n"
                                         "        return e + self.pe[start:start + T].unsqueeze(0)\n"}),
    Honest("float64-table-helper", {0: "import math\nimport torch\nfrom torch import nn\n\n"
                                       "def _positions(n, d):\n"
                                       "    p = torch.arange(n, dtype=torch.float64)[:, None]\n"
                                       "    w = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float64) / d)\n"
                                       "    t = torch.zeros(n, d, dtype=torch.float64)\n"
                                       "    t[:, 0::2] = torch.sin(p * w)\n    t[:, 1::2] = torch.cos(p * w)[:, : d // 2]\n"
                                       "    return t.float()\n\n"
                                       "class TokenAndPositionEmbedding(nn.Module):\n"
                                       "    def __init__(self, vocab_size, d_model, max_len, padding_idx=0):\n"
                                       "        super().__init__()\n"
                                       "        self.padding_idx = padding_idx\n"
                                       "        w = torch.randn(vocab_size, d_model) * d_model ** -0.5\n"
                                       "        w[padding_idx] = 0\n        self.weight = nn.Parameter(w)\n"
                                       "        self.register_buffer('table', _positions(max_len, d_model))\n\n"
                                       "    def forward(self, input_ids, start=0):\n"
                                       "        B, T = input_ids.shape\n"
                                       "        if start + T > self.table.shape[0]:\n            raise ValueError('past max_len')\n"
                                       "        out = []\n"
                                       "        for b in range(B):\n"
                                       "            rows = self.weight[input_ids[b]] * math.sqrt(self.weight.shape[1])\n"
                                       "            rows = rows * (input_ids[b] != self.padding_idx).float()[:, None]\n"
                                       "            out.append(rows + self.table[start:start + T])\n"
                                       "        return torch.stack(out)\n"}),
]
