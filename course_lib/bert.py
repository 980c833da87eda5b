"""BERT (Devlin et al. 2019): embeddings, the encoder, the pooler and the pretraining heads
(lessons 14, 17, 18).

Why one module: BERT as lessons 14, 17 and 18 build it, read top to bottom against the paper: the embeddings,
the encoder, the pooler, the Hugging Face weight mapping and the pretraining heads share BertConfig and one
parameter naming, and the lessons import all of it from this one module.

BERT's layer is the Post-LN Transformer encoder layer of Part II
(`course_lib.transformer.EncoderLayer`) with GELU and LayerNorm eps 1e-12; only the dropout
sites differ (see `bert_layer`). Parameter names follow Hugging Face where the modules are
BERT's own (`embeddings.word_embeddings`, `LayerNorm`, `pooler.dense`), and Part II's names
inside the layers (`layers.N.self_attn.q_proj`, `linear1`, `norm2`, ...);
`BertModel.from_hf_state_dict` translates one into the other.

Speed: BERT runs on PyTorch's fused kernels - `torch.nn.functional.scaled_dot_product_attention`
unless attention weights are requested (then the course's explicit attention), and
`nn.LayerNorm` / `nn.GELU`, which lessons 07 and 10 prove equal to the formulas written out in
`course_lib.layernorm` and `course_lib.activations`. `course bench` compares the result with
Hugging Face's `BertModel`.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from os import PathLike
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .activations import get_activation
from .layernorm import LayerNorm
from .masking import IGNORE_INDEX
from .transformer import EncoderLayer, TokenPacking, padding_mask
from .validation import (require_attention_mask, require_choice, require_divisible, require_finite,
                         require_id, require_ids, require_instance, require_int, require_labels,
                         require_positive, require_positive_int, require_probability, require_shape,
                         require_token_ids)

# Hugging Face activation names -> the course's (`course_lib.activations.get_activation` names).
_HF_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh",
                   "relu": "relu"}


@dataclass
class BertConfig:
    """BERT's hyper-parameters under Hugging Face's names. The defaults are BERT-base."""
    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_attention_heads", "intermediate_size",
                     "max_position_embeddings", "type_vocab_size"):
            require_positive_int(name, getattr(self, name))
        require_int("num_hidden_layers", self.num_hidden_layers, minimum=0)
        require_probability("hidden_dropout_prob", self.hidden_dropout_prob)
        require_probability("attention_probs_dropout_prob", self.attention_probs_dropout_prob)
        require_finite("initializer_range", self.initializer_range, minimum=0.0)
        require_positive("layer_norm_eps", self.layer_norm_eps)
        if self.pad_token_id is not None:
            require_id("pad_token_id", self.pad_token_id, self.vocab_size)
        require_divisible("hidden_size", self.hidden_size,
                          "num_attention_heads", self.num_attention_heads)
        require_choice("hidden_act", self.hidden_act, sorted(_HF_ACTIVATIONS))

    @classmethod
    def from_dict(cls, d: dict) -> BertConfig:
        """Keep the fields BertConfig knows; refuse settings that would change the model."""
        require_instance("d", d, dict, "a dict (a parsed config.json)")
        require_choice("position_embedding_type", d.get("position_embedding_type", "absolute"),
                       ("absolute",))                                 # the only one implemented
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    @classmethod
    def from_json(cls, path: str | PathLike) -> BertConfig:
        """Read a Hugging Face config.json (parsed JSON goes to `from_dict`)."""
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_dict(self) -> dict:
        return asdict(self)


class BertEmbeddings(nn.Module):
    """word + position + token type (segment), then LayerNorm and dropout.

    Summing three embeddings equals concatenating three one-hot vectors and multiplying by
    the three tables stacked (lesson 14). Positions are a learned table of
    `max_position_embeddings` rows: that table's size is BERT's 512-token limit.
    """

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        H = config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, H, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, H)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, H)
        self.LayerNorm = nn.LayerNorm(H, eps=config.layer_norm_eps)  # fused; see bert_layer
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None):
        """input_ids, token_type_ids: (B, T) -> (B, T, hidden_size). Where BERT's ids enter: the
        ids are checked here (a 513th position has no row in the table: lesson 05)."""
        c = self.config
        require_token_ids("input_ids", input_ids, c.vocab_size, c.max_position_embeddings,
                          "max_position_embeddings")
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        require_shape("token_type_ids", token_type_ids, input_ids.shape, "input_ids")
        require_ids("token_type_ids", token_type_ids, c.type_vocab_size, what="type_vocab_size")
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)  # (T,)
        x = (self.word_embeddings(input_ids)                              # (B, T, H)
             + self.position_embeddings(positions)                        # (T, H), broadcast
             + self.token_type_embeddings(token_type_ids))                # (B, T, H)
        return self.dropout(self.LayerNorm(x))


def bert_layer(config: BertConfig) -> EncoderLayer:
    """Part II's Post-LN encoder layer, configured as BERT's.

    Two differences from `nn.TransformerEncoderLayer`-style dropout: BERT drops attention
    probabilities with its own rate, and has no dropout between the two FFN matrices.

    Speed: fused=True - the layer's LayerNorms and GELU are PyTorch's kernels (`nn.LayerNorm`,
    `nn.GELU`), the same functions as `course_lib.layernorm.LayerNorm` and
    `course_lib.activations.GELU` (lessons 07 and 10 prove them equal; the parameter names
    `weight`/`bias` are the same). The written-out formulas read the activations 5-8 times
    each; in BERT they made the whole model ~25% slower than Hugging Face's.
    """
    return EncoderLayer(config.hidden_size, config.num_attention_heads, config.intermediate_size,
                        dropout=config.hidden_dropout_prob,
                        activation=_HF_ACTIVATIONS[config.hidden_act], norm_first=False,
                        layer_norm_eps=config.layer_norm_eps,
                        attention_dropout=config.attention_probs_dropout_prob,
                        activation_dropout=0.0, fused=True)


class BertPooler(nn.Module):
    """tanh(dense(h_[CLS])): the sentence vector the NSP/SOP head (and classifiers) read."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, sequence_output):
        return torch.tanh(self.dense(sequence_output[:, 0]))           # (B, H)


@dataclass
class BertModelOutput:
    """What BertModel (and AlbertModel) return, whatever the flags - Hugging Face's names."""
    last_hidden_state: torch.Tensor                      # (B, T, H); zeros at padded positions
    pooler_output: torch.Tensor                          # (B, H): tanh(dense(h_[CLS]))
    hidden_states: tuple[torch.Tensor, ...] | None = None  # output_hidden_states: L + 1 of (B, T, H)
    attentions: tuple[torch.Tensor, ...] | None = None     # output_attentions: L of (B, nh, T, T)


def run_layers(layers, x, attention_mask, mask, output_hidden_states: bool = False,
               output_attentions: bool = False):
    """x (B, T, H) through `layers` (BERT's, ALBERT's shared ones, a student's) ->
    (last (B, T, H), hidden_states or None, attentions or None).

    With padding (mask not None) the layers run on the real tokens only (`TokenPacking`):
    padded positions come out as zeros instead of vectors nobody should read. Not when
    attentions are requested (the explicit path keeps the (B, T) layout) nor while tracing
    (an exported graph must not depend on one batch's padding).
    """
    packing = None
    if mask is not None and not output_attentions and not _tracing():
        packing = TokenPacking(attention_mask)
    hidden_states, attentions = [x], []
    h = packing.pack(x) if packing is not None else x                    # (N, H) or (B, T, H)
    for layer in layers:
        if output_attentions:                                            # the explicit path
            h, weights = layer.forward_with_attention(h, mask)           # weights (B, nh, T, T)
            attentions.append(weights)
        else:                                                            # the fused kernel
            h = layer(h, mask, packing=packing)
        if output_hidden_states:
            hidden_states.append(packing.unpack(h) if packing is not None else h)
    last = packing.unpack(h) if packing is not None else h               # (B, T, H)
    return (last, tuple(hidden_states) if output_hidden_states else None,
            tuple(attentions) if output_attentions else None)


class BertModel(nn.Module):
    """input_ids (B, T) -> BertModelOutput: last_hidden_state (B, T, H), pooler_output (B, H)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = require_instance("config", config, BertConfig)
        self.embeddings = BertEmbeddings(config)
        self.layers = nn.ModuleList(bert_layer(config) for _ in range(config.num_hidden_layers))
        self.pooler = BertPooler(config)
        self.apply(lambda m: init_bert_weights(m, config.initializer_range))

    def forward(self, input_ids, token_type_ids=None, attention_mask=None,
                output_hidden_states: bool = False, output_attentions: bool = False
                ) -> BertModelOutput:
        """input_ids, token_type_ids: (B, T) ids; attention_mask: (B, T), 1 = token, 0 = padding.

        Returns a BertModelOutput; output_hidden_states / output_attentions fill its
          hidden_states: num_hidden_layers + 1 tensors (B, T, H): the embeddings' output, then
                         every layer's (the last is last_hidden_state);
          attentions:    num_hidden_layers tensors (B, n_heads, T, T).
        No real token attends to a padded one, and the layers skip the padded positions
        (see `run_layers`): their vectors are zeros, which callers ignore.
        """
        x = self.embeddings(input_ids, token_type_ids)                   # (B, T, H); checks the ids
        mask = encoder_mask(attention_mask, input_ids)                   # (B, 1, 1, T) or None
        last, hidden_states, attentions = run_layers(self.layers, x, attention_mask, mask,
                                                     output_hidden_states, output_attentions)
        return BertModelOutput(last, self.pooler(last), hidden_states, attentions)

    # -- Hugging Face weights ---------------------------------------------------------------
    @classmethod
    def from_hf_state_dict(cls, config: BertConfig, state_dict: dict) -> BertModel:
        """A BertModel holding the weights of a Hugging Face `BertModel` state dict.

        Accepts keys with or without the "bert." prefix of `BertForPreTraining` checkpoints;
        keys outside the encoder (e.g. "cls.*" heads) and the position_ids buffer are ignored.
        Every parameter must be present (a missing one raises).
        """
        model = cls(config)
        load_renamed(model, hf_to_course_state_dict(state_dict, config.num_hidden_layers))
        return model

    def to_hf_state_dict(self) -> dict:
        """The inverse renaming: a state dict that Hugging Face's `BertModel` loads."""
        rename = {ours: theirs for theirs, ours in
                  _hf_key_map(self.config.num_hidden_layers).items()}
        return {rename[k]: v for k, v in self.state_dict().items()}


def encoder_mask(attention_mask, input_ids) -> torch.Tensor | None:
    """The mask BERT's layers take (BERT, ALBERT and the distilled students alike): the
    (B, 1, 1, T) `padding_mask` of a (B, T) attention_mask shaped like `input_ids` (checked
    here, at the models' entry), or None when there is nothing to mask.

    No padding: every key is allowed, so no mask at all. The fused kernel is faster without one
    (Hugging Face's SDPA path makes the same choice). Not while tracing (ONNX export,
    torch.compile): the graph must keep the mask, or a padded batch fed to the exported model
    later would attend to its padding."""
    if attention_mask is not None:
        require_attention_mask("attention_mask", attention_mask, input_ids)
    mask = padding_mask(attention_mask)                                  # (B, 1, 1, T) or None
    if mask is not None and not _tracing() and mask.all():
        return None
    return mask


def _tracing() -> bool:
    """True while torch.jit traces (the ONNX exporter) or torch.compile / torch.export runs."""
    return torch.jit.is_tracing() or torch.compiler.is_compiling()


def _hf_key_map(num_layers: int) -> dict[str, str]:
    """Hugging Face BertModel parameter name -> the course's."""
    names = {}
    for part in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        names[f"embeddings.{part}.weight"] = f"embeddings.{part}.weight"
    per_layer = {
        "attention.self.query": "self_attn.q_proj",
        "attention.self.key": "self_attn.k_proj",
        "attention.self.value": "self_attn.v_proj",
        "attention.output.dense": "self_attn.out_proj",
        "attention.output.LayerNorm": "norm1",
        "intermediate.dense": "linear1",
        "output.dense": "linear2",
        "output.LayerNorm": "norm2",
    }
    for leaf in ("weight", "bias"):
        names[f"embeddings.LayerNorm.{leaf}"] = f"embeddings.LayerNorm.{leaf}"
        names[f"pooler.dense.{leaf}"] = f"pooler.dense.{leaf}"
        for i in range(num_layers):
            for theirs, ours in per_layer.items():
                names[f"encoder.layer.{i}.{theirs}.{leaf}"] = f"layers.{i}.{ours}.{leaf}"
    return names


def load_renamed(model: nn.Module, state_dict: dict) -> None:
    """model.load_state_dict(state_dict, strict=True), with a short error naming what does not fit
    (torch's lists every missing key of a whole model) - e.g. a checkpoint of another size."""
    ours = model.state_dict()
    missing = [k for k in ours if k not in state_dict]
    unexpected = [k for k in state_dict if k not in ours]
    resized = [f"{k} {tuple(state_dict[k].shape)} vs {tuple(v.shape)}" for k, v in ours.items()
               if k in state_dict and tuple(getattr(state_dict[k], "shape", ())) != tuple(v.shape)]
    for what, keys in (("missing", missing), ("unexpected", unexpected),
                       ("of another shape (checkpoint vs model)", resized)):
        if keys:
            raise ValueError(f"state_dict: {len(keys)} tensor(s) {what} for this "
                             f"{type(model).__name__} config, e.g. {keys[:3]} - a checkpoint of "
                             f"another model or size, or a course (not Hugging Face) state dict?")
    model.load_state_dict(state_dict, strict=True)


def hf_to_course_state_dict(state_dict: dict, num_layers: int) -> dict:
    require_instance("state_dict", state_dict, dict, "a dict name -> tensor")
    names = _hf_key_map(num_layers)
    out = {}
    for key, value in state_dict.items():
        key = key.removeprefix("bert.")
        if key in names:
            out[names[key]] = value
        elif key.startswith(("embeddings.", "encoder.", "pooler.")) and not key.endswith("_ids"):
            raise ValueError(f"state_dict: unexpected Hugging Face key {key!r} for a "
                             f"{num_layers}-layer BertModel (num_layers={num_layers})")
    return out


def init_bert_weights(module: nn.Module, std: float = 0.02) -> None:
    """BERT's initialisation: N(0, 0.02) weights, zero biases, LayerNorm at identity."""
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=std)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Embedding):
        nn.init.normal_(module.weight, std=std)
        if module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()
    elif isinstance(module, (LayerNorm, nn.LayerNorm)):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


# ---------------------------------------------------------------------------------------------
# Pretraining: masked LM + next-sentence (or sentence-order) prediction
# ---------------------------------------------------------------------------------------------

class BertLMHead(nn.Module):
    """transform (dense, GELU, LayerNorm), then the decoder, whose weight IS the word
    embedding matrix (V, H) - no transpose: nn.Linear(H, V) stores its weight as (V, H) -
    plus a bias of its own."""

    def __init__(self, config: BertConfig, word_embeddings: nn.Embedding):
        super().__init__()
        H, V = config.hidden_size, config.vocab_size
        self.dense = nn.Linear(H, H)
        self.activation = get_activation(_HF_ACTIVATIONS[config.hidden_act], fused=True)
        self.LayerNorm = nn.LayerNorm(H, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(H, V, bias=False)
        self.decoder.weight = word_embeddings.weight                   # tied
        self.bias = nn.Parameter(torch.zeros(V))

    def forward(self, sequence_output):
        h = self.LayerNorm(self.activation(self.dense(sequence_output)))  # (B, T, H)
        return self.decoder(h) + self.bias                                # (B, T, V)


@dataclass
class PreTrainingOutput:
    loss: torch.Tensor | None                 # mlm_loss + nsp_loss (those that were computed)
    mlm_loss: torch.Tensor | None
    nsp_loss: torch.Tensor | None
    prediction_logits: torch.Tensor           # (B, T, vocab_size)
    seq_relationship_logits: torch.Tensor     # (B, 2)


class BertForPreTraining(nn.Module):
    """BertModel + the masked-LM head (tied to the word embeddings) + a 2-way classifier on
    the pooled [CLS] vector (NSP: "is B the real next sentence?", or SOP: "are A and B in
    their original order?" - the head is the same, only the labels differ)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.mlm_head = BertLMHead(config, self.bert.embeddings.word_embeddings)
        self.nsp_head = nn.Linear(config.hidden_size, 2)
        # Not mlm_head.apply(...): that would re-initialise the tied decoder, i.e. the embeddings.
        init_bert_weights(self.mlm_head.dense, config.initializer_range)
        init_bert_weights(self.nsp_head, config.initializer_range)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, labels=None,
                next_sentence_label=None) -> PreTrainingOutput:
        """labels: (B, T) original ids at masked positions, -100 elsewhere (see
        `course_lib.masking.mask_tokens`); next_sentence_label: (B,) 0 = B follows A
        (or: in order), 1 = random B (or: swapped).

        loss = mean cross-entropy over the positions with label != -100
             + mean cross-entropy of the 2-way sentence-pair classification.
        Unmasked positions contribute nothing: their labels are -100.
        """
        out = self.bert(input_ids, token_type_ids, attention_mask)
        prediction_logits = self.mlm_head(out.last_hidden_state)         # (B, T, V)
        seq_relationship_logits = self.nsp_head(out.pooler_output)       # (B, 2)
        mlm_loss = nsp_loss = None
        if labels is not None:                                           # checked there
            mlm_loss = mlm_cross_entropy(prediction_logits, labels)
        if next_sentence_label is not None:
            require_shape("next_sentence_label", next_sentence_label, input_ids.shape[:1], "the batch (B,)")
            require_labels("next_sentence_label", next_sentence_label, 2)
            nsp_loss = F.cross_entropy(seq_relationship_logits, next_sentence_label)
        parts = [x for x in (mlm_loss, nsp_loss) if x is not None]
        loss = sum(parts) if parts else None
        return PreTrainingOutput(loss, mlm_loss, nsp_loss, prediction_logits,
                                 seq_relationship_logits)

    @classmethod
    def from_hf_state_dict(cls, config: BertConfig, state_dict: dict) -> BertForPreTraining:
        """Load a Hugging Face `BertForPreTraining` state dict ("bert.*" and "cls.*" keys)."""
        heads = {"cls.predictions.transform.dense": "mlm_head.dense",
                 "cls.predictions.transform.LayerNorm": "mlm_head.LayerNorm",
                 "cls.seq_relationship": "nsp_head"}
        out = {"bert." + k: v for k, v in
               hf_to_course_state_dict(state_dict, config.num_hidden_layers).items()}
        for key, value in state_dict.items():
            prefix, _, leaf = key.rpartition(".")
            if prefix in heads:
                out[f"{heads[prefix]}.{leaf}"] = value
            elif key == "cls.predictions.bias":
                out["mlm_head.bias"] = value
            # cls.predictions.decoder.* is the tied embedding (and the same bias) again
        if "bert.embeddings.word_embeddings.weight" in out:          # else load_renamed names it
            out["mlm_head.decoder.weight"] = out["bert.embeddings.word_embeddings.weight"]
        model = cls(config)
        load_renamed(model, out)
        return model


def mlm_cross_entropy(prediction_logits, labels):
    """Mean cross-entropy over the positions whose label is not -100.

    A batch in which no position was selected has no MLM term: the loss is 0 (with a graft
    to the graph so backward() still works), not F.cross_entropy's 0/0 = NaN.
    """
    V = prediction_logits.shape[-1]
    require_shape("labels", labels, prediction_logits.shape[:-1], "prediction_logits without V")
    # -1 or V would stop cross_entropy with "Target -1 is out of bounds"
    require_labels("labels", labels, V, what="vocab_size")
    selected = labels != IGNORE_INDEX
    if not selected.any():
        return prediction_logits.sum() * 0.0
    return F.cross_entropy(prediction_logits.reshape(-1, V), labels.reshape(-1),
                           ignore_index=IGNORE_INDEX)
