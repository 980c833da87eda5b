"""Exercise 23 (ALBERT's parameter count): wrong answers a learner writes, honest alternatives."""
from . import Honest, Mistake

_BASE = '''def albert_num_parameters(config):
    V, E, H = config["vocab_size"], config["embedding_size"], config["hidden_size"]
    I, G, L = config["intermediate_size"], config["num_hidden_groups"], config["num_hidden_layers"]
    tables = (V + config["max_position_embeddings"] + config["type_vocab_size"]) * E + 2 * E
    mapping = E * H + H
    layer = 4 * (H * H + H) + (H * I + I) + (I * H + H) + 2 * 2 * H
    pooler = H * H + H
    return int(tables + mapping + G * layer + pooler)
'''


def _with(*pairs):
    source = _BASE
    for old, new in pairs:
        assert old in source, old
        source = source.replace(old, new)
    return {0: source}


MISTAKES = [
    Mistake("23.albert-released", "no-pooler", _with(("    pooler = H * H + H\n", "    pooler = 0\n")), "pooler"),
    Mistake("23.albert-released", "bert-wide-tables", _with(
        ('* E + 2 * E\n    mapping = E * H + H', '* H + 2 * H\n    mapping = 0')), "H-wide embedding tables"),
    Mistake("23.albert-released", "mapping-without-bias", _with(("    mapping = E * H + H\n", "    mapping = E * H\n")),
            "bias"),
    Mistake("23.albert-random", "all-layers-counted", _with(("G * layer", "L * layer")), "shares them"),
    Mistake("23.albert-random", "no-mapping", _with(("    mapping = E * H + H\n", "    mapping = 0\n")),
            "E -> H projection"),
    Mistake("23.albert-random", "only-word-table", _with(
        ('(V + config["max_position_embeddings"] + config["type_vocab_size"]) * E',
         'V * E')), "position and token-type"),
    Mistake("23.albert-random", "one-layernorm-per-layer", _with(("+ 2 * 2 * H", "+ 2 * H")), "expected"),
]

HONEST = [
    Honest("module-by-module", {0: '''def _linear(n_in, n_out):
    return n_in * n_out + n_out


def _norm(n):
    return 2 * n


def albert_num_parameters(config):
    c = config
    E, H, I = c["embedding_size"], c["hidden_size"], c["intermediate_size"]
    rows = c["vocab_size"] + c["max_position_embeddings"] + c["type_vocab_size"]
    embeddings = rows * E + _norm(E) + _linear(E, H)
    layer = 4 * _linear(H, H) + _norm(H) + _linear(H, I) + _linear(I, H) + _norm(H)
    return embeddings + c["num_hidden_groups"] * layer + _linear(H, H)
'''}),
    Honest("numpy-sum", {0: '''import numpy as np


def albert_num_parameters(config):
    c = config
    E, H, I = c["embedding_size"], c["hidden_size"], c["intermediate_size"]
    shapes = [(c["vocab_size"], E), (c["max_position_embeddings"], E), (c["type_vocab_size"], E), (E,), (E,),
              (H, E), (H,)]
    for _ in range(c["num_hidden_groups"]):
        shapes += [(H, H), (H,)] * 4 + [(H,), (H,), (I, H), (I,), (H, I), (H,), (H,), (H,)]
    shapes += [(H, H), (H,)]
    return int(sum(int(np.prod(s)) for s in shapes))
'''}),
]
