"""ALBERT (Lan et al. 2020): BERT with fewer parameters (lesson 23).

Two changes to BERT's architecture, both about parameters, not compute:

1. **Factorised embedding.** BERT's word table is V x H (30,522 x 768 = 23.4M in BERT-base).
   ALBERT stores V x E with a small E (128) and maps E -> H with one linear layer:
   V*E + E*H instead of V*H. The position and token-type tables are E wide too.
2. **Cross-layer sharing.** The encoder has `num_hidden_layers` layers but only
   `num_hidden_groups` distinct sets of weights (1 in the released models: every layer is the
   same layer, applied again). Compute per token is BERT's; parameters are one layer's.

The layer itself is BERT's (`course_lib.bert.bert_layer`). Parameter names follow Part II
inside the layers (`groups.0.self_attn.q_proj`, ...). The released ALBERT models also replace
NSP by sentence-order prediction (lesson 16) and drop dropout; neither changes a count.

`bert_parameter_count` / `albert_parameter_count` are the closed forms of the two models'
sizes; `count_parameters` counts a module's distinct tensors (a shared tensor once).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import torch
from torch import nn

from .bert import (BertConfig, BertEmbeddings, BertModelOutput, BertPooler, bert_layer, encoder_mask,
                   init_bert_weights, load_renamed, run_layers)
from .validation import require_instance, require_positive_int


@dataclass
class AlbertConfig(BertConfig):
    """ALBERT's hyper-parameters under Hugging Face's names. The defaults are ALBERT-base."""
    vocab_size: int = 30000
    hidden_act: str = "gelu_new"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    embedding_size: int = 128         # E: width of the embedding tables
    num_hidden_groups: int = 1        # distinct layer weights; 1 = every layer shared

    def __post_init__(self):
        super().__post_init__()
        for name in ("embedding_size", "num_hidden_groups", "num_hidden_layers"):
            require_positive_int(name, getattr(self, name))      # not int(2.5) = 2, not True
        if self.num_hidden_layers % self.num_hidden_groups != 0:
            raise ValueError(f"num_hidden_groups={self.num_hidden_groups} must divide "
                             f"num_hidden_layers={self.num_hidden_layers}")


def _embedding_config(config: AlbertConfig) -> BertConfig:
    """BERT's embedding block at width E: the same three tables, LayerNorm and dropout."""
    bert_fields = {f.name for f in fields(BertConfig)}
    values = {k: v for k, v in config.to_dict().items() if k in bert_fields}
    return BertConfig(**{**values, "hidden_size": config.embedding_size, "num_attention_heads": 1})


class AlbertModel(nn.Module):
    """input_ids (B, T) -> BertModelOutput: last_hidden_state (B, T, H), pooler_output (B, H)."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        self.config = require_instance("config", config, AlbertConfig,
                                       "an AlbertConfig (embedding_size, num_hidden_groups)")
        self.embeddings = BertEmbeddings(_embedding_config(config))          # tables V x E, ...
        self.embedding_hidden_mapping_in = nn.Linear(config.embedding_size, config.hidden_size)
        self.groups = nn.ModuleList(bert_layer(config) for _ in range(config.num_hidden_groups))
        self.pooler = BertPooler(config)
        self.apply(lambda m: init_bert_weights(m, config.initializer_range))

    def layer_for(self, i: int) -> nn.Module:
        """The weights layer i uses: consecutive layers share a group (Hugging Face's order)."""
        per_group = self.config.num_hidden_layers // self.config.num_hidden_groups
        return self.groups[i // per_group]

    def forward(self, input_ids, token_type_ids=None, attention_mask=None,
                output_hidden_states: bool = False, output_attentions: bool = False
                ) -> BertModelOutput:
        """input_ids, token_type_ids: (B, T) ids; attention_mask: (B, T), 1 = token, 0 = padding.
        Returns BERT's `BertModelOutput`, and runs its layers as BERT does
        (`course_lib.bert.run_layers`: no mask at all without padding, only the real tokens with)."""
        x = self.embeddings(input_ids, token_type_ids)                       # (B, T, E); checks the ids
        mask = encoder_mask(attention_mask, input_ids)                       # (B, 1, 1, T) or None
        x = self.embedding_hidden_mapping_in(x)                              # (B, T, H)
        layers = (self.layer_for(i) for i in range(self.config.num_hidden_layers))  # shared weights
        last, hidden_states, attentions = run_layers(layers, x, attention_mask, mask,
                                                     output_hidden_states, output_attentions)
        return BertModelOutput(last, self.pooler(last), hidden_states, attentions)


def count_parameters(module: nn.Module) -> int:
    """Number of distinct parameters: `parameters()` yields a shared tensor once."""
    return sum(p.numel() for p in module.parameters())


def _layer_count(H: int, I: int) -> int:
    """One BERT encoder layer: Q, K, V, output (H x H + H each), FFN H -> I -> H, two LayerNorms."""
    return 4 * (H * H + H) + (H * I + I) + (I * H + H) + 2 * (2 * H)


def bert_parameter_count(config: BertConfig, pooler: bool = True) -> int:
    """BERT's size in closed form (RoBERTa is the same formula with its vocabulary and tables)."""
    c = config
    H = c.hidden_size
    embeddings = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * H + 2 * H
    return (embeddings + c.num_hidden_layers * _layer_count(H, c.intermediate_size)
            + (H * H + H if pooler else 0))


def albert_parameter_count(config: AlbertConfig, pooler: bool = True) -> int:
    """ALBERT's size in closed form: E-wide tables, one E -> H map, `num_hidden_groups` layers."""
    c = config
    E, H = c.embedding_size, c.hidden_size
    embeddings = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * E + 2 * E
    return (embeddings + (E * H + H) + c.num_hidden_groups * _layer_count(H, c.intermediate_size)
            + (H * H + H if pooler else 0))


def meta_model(cls, config) -> nn.Module:
    """Instantiate a model without allocating its weights (shapes only): enough to count."""
    require_instance("cls", cls, type, "a model class (e.g. BertModel), not an instance")
    with torch.device("meta"):
        return cls(config)


def from_hf_state_dict(config: AlbertConfig, state_dict: dict) -> AlbertModel:
    """A course AlbertModel holding the weights of a Hugging Face `AlbertModel` state dict
    (inner_group_num = 1, as in every released ALBERT)."""
    per_layer = {"attention.query": "self_attn.q_proj", "attention.key": "self_attn.k_proj",
                 "attention.value": "self_attn.v_proj", "attention.dense": "self_attn.out_proj",
                 "attention.LayerNorm": "norm1", "ffn": "linear1", "ffn_output": "linear2",
                 "full_layer_layer_norm": "norm2"}
    out = {}
    for key, value in state_dict.items():
        key = key.removeprefix("albert.")
        if key.startswith(("embeddings.", "pooler.")) and not key.endswith("_ids"):
            out[key.replace("pooler.", "pooler.dense.")] = value
        elif key.startswith("encoder.embedding_hidden_mapping_in."):
            out[key.removeprefix("encoder.")] = value
        elif key.startswith("encoder.albert_layer_groups."):
            parts = key.split(".")           # encoder.albert_layer_groups.G.albert_layers.0.<name>.<leaf>
            name = ".".join(parts[5:-1])
            if len(parts) < 7 or name not in per_layer:
                raise ValueError(f"state_dict: unexpected Hugging Face ALBERT key {key!r} (expected "
                                 f"encoder.albert_layer_groups.G.albert_layers.0.<name>.<leaf>, "
                                 f"<name> one of {sorted(per_layer)})")
            if parts[4] != "0":
                raise ValueError(f"state_dict: inner_group_num > 1 is not implemented ({key!r})")
            out[f"groups.{parts[2]}.{per_layer[name]}.{parts[-1]}"] = value
    model = AlbertModel(config)
    load_renamed(model, out)
    return model
