"""Exercise 12 (factorised vocabulary matrix tied at both ends; the parameters it saves): wrong answers and
honest alternatives. Answer cells: 0 FactorizedTiedVocab, 1 parameters_saved, 2 the written answer."""
from . import Honest, Mistake

_INIT = ("import math\nimport torch\nfrom torch import nn\n\nclass FactorizedTiedVocab(nn.Module):\n"
         "    def __init__(self, vocab_size, embed_dim, hidden_dim):\n        super().__init__()\n"
         "        self.word = nn.Embedding(vocab_size, embed_dim)\n"
         "        self.project_in = nn.Linear(embed_dim, hidden_dim)\n"
         "        self.project_out = nn.Linear(hidden_dim, embed_dim)\n"
         "        self.output_bias = nn.Parameter(torch.zeros(vocab_size))\n\n")
_FWD = "    def forward(self, ids):\n        return self.project_in(self.word(ids))\n\n"
_LOG = "    def logits(self, h):\n        return self.project_out(h) @ self.word.weight.T + self.output_bias\n"


def _module(init=_INIT, forward=_FWD, logits=_LOG):
    return {0: init + forward + logits}



def _saved(body):
    return {1: "def parameters_saved(vocab_size, embed_dim, hidden_dim):\n"
               "    V, E, H = vocab_size, embed_dim, hidden_dim\n" + body}


MISTAKES = [
    Mistake("12.factorized-embed", "no-projection-up",
            _module(forward="    def forward(self, ids):\n        return self.word(ids)\n\n"), "forward(ids) has shape"),
    Mistake("12.factorized-embed", "separate-output-matrix",
            _module(init=_INIT.replace("        self.output_bias = nn.Parameter(torch.zeros(vocab_size))\n",
                                       "        self.output = nn.Linear(hidden_dim, vocab_size)\n"),
                    logits="    def logits(self, h):\n        return self.output(h)\n"), "separate vocabulary-sized"),
    Mistake("12.factorized-embed", "no-output-bias",
            _module(init=_INIT.replace("        self.output_bias = nn.Parameter(torch.zeros(vocab_size))\n", ""),
                    logits="    def logits(self, h):\n        return self.project_out(h) @ self.word.weight.T\n"),
            "expected exactly"),
    Mistake("12.factorized-embed", "scaled-by-sqrt-embed-dim",
            _module(forward="    def forward(self, ids):\n"
                            "        return self.project_in(self.word(ids) * math.sqrt(self.word.embedding_dim))\n\n"),
            "differs from the reference"),
    Mistake("12.factorized-embed", "unfactorised-embedding",
            _module(init=_INIT.replace("self.word = nn.Embedding(vocab_size, embed_dim)",
                                       "self.word = nn.Embedding(vocab_size, hidden_dim)")), "word.weight has shape"),
    Mistake("12.factorized-logits", "detached-output-use",
            _module(logits="    def logits(self, h):\n"
                           "        return self.project_out(h) @ self.word.weight.detach().T + self.output_bias\n"),
            "lookup's only"),
    Mistake("12.factorized-logits", "output-bias-forgotten",
            _module(logits="    def logits(self, h):\n        return self.project_out(h) @ self.word.weight.T\n"),
            "worked example"),
    Mistake("12.factorized-logits", "project-in-transposed-instead-of-project-out",
            _module(logits="    def logits(self, h):\n"
                           "        return (h @ self.project_in.weight) @ self.word.weight.T + self.output_bias\n"),
            "differs from the reference"),
    Mistake("12.factorized-logits", "data-not-parameter",
            _module(logits="    def logits(self, h):\n"
                           "        return self.project_out(h) @ self.word.weight.data.T + self.output_bias\n"),
            "gradient"),
    Mistake("12.parameters-saved", "baseline-output-layer-without-bias",
            _saved("    return (V * H + H * V) - (V * E + E * H + H + H * E + E + V)\n"), "has a bias"),
    Mistake("12.parameters-saved", "projections-without-biases",
            _saved("    return (V * H + H * V + V) - (V * E + 2 * E * H + V)\n"), "project_in and project_out have biases"),
    Mistake("12.parameters-saved", "factorised-matrix-counted-at-both-ends",
            _saved("    return (V * H + H * V + V) - (2 * V * E + E * H + H + H * E + E + V)\n"), "holds its V x E matrix once"),
    Mistake("12.parameters-saved", "only-what-tying-saves", _saved("    return V * H\n"), "tying alone"),
    Mistake("12.parameters-saved", "factorised-minus-untied", _saved(
        "    return (V * E + E * H + H + H * E + E + V) - (V * H + H * V + V)\n"), "sign is reversed"),
    Mistake("12.parameters-saved", "float-division-somewhere", _saved(
        "    return (2 * V * H - V * E - 2 * E * H - H - E) / 1.0 + 0.5\n"), "whole number"),
]

HONEST = [
    Honest("functional-linear", {0: "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n"
                                    "class FactorizedTiedVocab(nn.Module):\n"
                                    "    def __init__(self, vocab_size, embed_dim, hidden_dim):\n"
                                    "        super().__init__()\n"
                                    "        self.word = nn.Embedding(vocab_size, embed_dim)\n"
                                    "        self.project_in = nn.Linear(embed_dim, hidden_dim)\n"
                                    "        self.project_out = nn.Linear(hidden_dim, embed_dim)\n"
                                    "        self.output_bias = nn.Parameter(torch.zeros(vocab_size))\n\n"
                                    "    def forward(self, ids):\n"
                                    "        return self.project_in(F.embedding(ids, self.word.weight))\n\n"
                                    "    def logits(self, h):\n"
                                    "        return F.linear(self.project_out(h), self.word.weight, self.output_bias)\n"}),
    Honest("einsum-float64-helper", {0: "import torch\nfrom torch import nn\n\n"
                                        "def _score(z, table, bias):\n"
                                        "    return (torch.einsum('...e,ve->...v', z.double(), table.double()) + bias).to(z.dtype)\n\n"
                                        "class FactorizedTiedVocab(nn.Module):\n"
                                        "    def __init__(self, vocab_size, embed_dim, hidden_dim):\n"
                                        "        super().__init__()\n"
                                        "        self.output_bias = nn.Parameter(torch.zeros(vocab_size))\n"
                                        "        self.project_out = nn.Linear(hidden_dim, embed_dim)\n"
                                        "        self.project_in = nn.Linear(embed_dim, hidden_dim)\n"
                                        "        self.word = nn.Embedding(vocab_size, embed_dim)\n\n"
                                        "    def forward(self, ids):\n"
                                        "        flat = self.word.weight.index_select(0, ids.reshape(-1))\n"
                                        "        return self.project_in(flat).reshape(*ids.shape, -1)\n\n"
                                        "    def logits(self, h):\n"
                                        "        return _score(self.project_out(h), self.word.weight, self.output_bias)\n",
                                     1: "import torch\nfrom torch import nn\n\n"
                                        "def _count(module):\n    return sum(p.numel() for p in module.parameters())\n\n"
                                        "def parameters_saved(vocab_size, embed_dim, hidden_dim):\n"
                                        "    # measured, not derived: build both on the meta device (no memory) and count\n"
                                        "    with torch.device('meta'):\n"
                                        "        untied = nn.ModuleList([nn.Embedding(vocab_size, hidden_dim), nn.Linear(hidden_dim, vocab_size)])\n"
                                        "        tied = FactorizedTiedVocab(vocab_size, embed_dim, hidden_dim)\n"
                                        "    return _count(untied) - _count(tied)\n"}),
    Honest("factored-closed-form", {1: "def parameters_saved(vocab_size, embed_dim, hidden_dim):\n"
                                       "    V, E, H = vocab_size, embed_dim, hidden_dim\n"
                                       "    # the V-sized terms: 2VH + V before, VE + V after; the projections: 2EH + H + E\n"
                                       "    return V * (2 * H - E) - (2 * E * H + H + E)\n"}),
]
