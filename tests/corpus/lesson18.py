"""Exercise 18 (Hugging Face -> course parameter names): wrong answers a learner writes, honest ones."""
from . import Honest, Mistake

_BASE = '''def hf_key_to_course(name: str) -> str:
    per_layer = {"attention.self.query": "self_attn.q_proj",
                 "attention.self.key": "self_attn.k_proj",
                 "attention.self.value": "self_attn.v_proj",
                 "attention.output.dense": "self_attn.out_proj",
                 "attention.output.LayerNorm": "norm1",
                 "intermediate.dense": "linear1",
                 "output.dense": "linear2",
                 "output.LayerNorm": "norm2"}
    keep = {"embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
            "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight",
            "embeddings.LayerNorm.bias", "pooler.dense.weight", "pooler.dense.bias"}
    if name in keep:
        return name
    parts = name.split(".")
    if len(parts) >= 5 and parts[:2] == ["encoder", "layer"] and parts[2].isdigit():
        part, leaf = ".".join(parts[3:-1]), parts[-1]
        if part in per_layer and leaf in ("weight", "bias"):
            return f"layers.{int(parts[2])}.{per_layer[part]}.{leaf}"
    raise ValueError(f"unknown parameter {name!r}")
'''


def _with(*pairs):
    source = _BASE
    for old, new in pairs:
        assert old in source, old
        source = source.replace(old, new)
    return {0: source}


MISTAKES = [
    Mistake("18.key-map", "query-key-swapped", _with(('"self_attn.q_proj"', '"TMP"'), ('"self_attn.k_proj"', '"self_attn.q_proj"'),
                                                      ('"TMP"', '"self_attn.k_proj"')), "swapped"),
    Mistake("18.key-map", "layernorms-swapped", _with(('"norm1"', '"TMP"'), ('"norm2"', '"norm1"'), ('"TMP"', '"norm2"')),
            "swapped"),
    Mistake("18.key-map", "dense-layers-swapped", _with(('"linear1"', '"TMP"'), ('"linear2"', '"linear1"'), ('"TMP"', '"linear2"')),
            "which has shape"),
    Mistake("18.key-map", "attention-output-as-ffn-output", _with(('"self_attn.out_proj"', '"linear2"')), "which has shape"),
    Mistake("18.key-map-any-layer", "single-digit-layers", _with(
        ('parts[2].isdigit()', 'len(parts[2]) == 1 and parts[2].isdigit()')), "deeper BERT"),
    Mistake("18.key-map-any-layer", "minilm-layers-only", _with(
        ('parts[2].isdigit()', 'parts[2] in ("0", "1", "2", "3", "4", "5")')), "deeper BERT"),
    Mistake("18.key-map-any-layer", "layer-from-one-character", _with(
        ('f"layers.{int(parts[2])}.', 'f"layers.{name[14]}.')), "deeper BERT"),
    Mistake("18.key-map-unknown", "unknown-passes-through", _with(
        ('    raise ValueError(f"unknown parameter {name!r}")\n', '    return name\n')), "expected a ValueError"),
    Mistake("18.key-map-unknown", "key-error", _with(
        ('    raise ValueError(f"unknown parameter {name!r}")\n', '    raise KeyError(name)\n')), "KeyError"),
    Mistake("18.key-map-unknown", "message-without-the-name", _with(
        ('    raise ValueError(f"unknown parameter {name!r}")\n', '    raise ValueError("unknown parameter")\n')),
        "should name the key"),
]

HONEST = [
    Honest("regular-expression", {0: '''import re

_PARTS = {"attention.self.query": "self_attn.q_proj", "attention.self.key": "self_attn.k_proj",
          "attention.self.value": "self_attn.v_proj", "attention.output.dense": "self_attn.out_proj",
          "attention.output.LayerNorm": "norm1", "intermediate.dense": "linear1",
          "output.dense": "linear2", "output.LayerNorm": "norm2"}
_LAYER = re.compile(r"encoder\\.layer\\.(\\d+)\\.(.+)\\.(weight|bias)")
_SAME = re.compile(r"(embeddings\\.(word|position|token_type)_embeddings\\.weight|"
                   r"(embeddings\\.LayerNorm|pooler\\.dense)\\.(weight|bias))")


def hf_key_to_course(name: str) -> str:
    if _SAME.fullmatch(name):
        return name
    m = _LAYER.fullmatch(name)
    if m and m.group(2) in _PARTS:
        return f"layers.{int(m.group(1))}.{_PARTS[m.group(2)]}.{m.group(3)}"
    raise ValueError(f"{name!r} is not a BertModel parameter")
'''}),
    Honest("prefix-stripping", {0: '''def hf_key_to_course(name: str) -> str:
    fixed = ["embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
             "embeddings.token_type_embeddings.weight"]
    for module in ("embeddings.LayerNorm", "pooler.dense"):
        fixed += [module + ".weight", module + ".bias"]
    if name in fixed:
        return name
    prefix = "encoder.layer."
    if name.startswith(prefix):
        number, _, rest = name[len(prefix):].partition(".")
        table = [("attention.self.query", "self_attn.q_proj"), ("attention.self.key", "self_attn.k_proj"),
                 ("attention.self.value", "self_attn.v_proj"), ("attention.output.dense", "self_attn.out_proj"),
                 ("attention.output.LayerNorm", "norm1"), ("intermediate.dense", "linear1"),
                 ("output.dense", "linear2"), ("output.LayerNorm", "norm2")]
        for hf, ours in table:
            for leaf in ("weight", "bias"):
                if rest == f"{hf}.{leaf}" and number.isdigit():
                    return f"layers.{int(number)}.{ours}.{leaf}"
    raise ValueError("cannot map " + repr(name))
'''}),
]
