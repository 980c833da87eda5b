"""The Transformer block and the models built from it (lessons 09, 11, 12; BERT's layer in Part III).

Why one module: Part II's models read as one story: the encoder and decoder layers, their stacks and the two
models built from them share one mask convention and PyTorch's parameter names (`torch_to_course_state_dict`),
and the lessons import them all from this one module (a split would change the lessons' imports).

Masks are boolean, True = may attend, broadcastable to (B, n_heads, T_q, T_k) - the
convention of `course_lib.attention`. (PyTorch's `nn.Transformer*` masks mean the opposite:
True = NOT allowed; invert them with `~` when comparing.)

Layer sub-modules carry PyTorch's names (`self_attn`, `linear1`, `linear2`, `norm1`, ...)
so that `torch_to_course_state_dict` copies weights from `nn.TransformerEncoderLayer`,
`nn.TransformerDecoderLayer` or whole PyTorch stacks.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .activations import get_activation
from .attention import MultiHeadAttention
from .embedding import ScaledEmbedding
from .layernorm import LayerNorm
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from .validation import (is_int, require_attention_mask, require_choice, require_divisible, require_id,
                         require_instance, require_int, require_positive, require_positive_int,
                         require_probability, require_same_batch, require_token_ids)


# --------------------------------------------------------------------------- masks

def causal_mask(T: int, device=None) -> torch.Tensor:
    """(T, T) bool, True on and below the diagonal: query i may attend to keys 0..i."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def padding_mask(attention_mask) -> torch.Tensor | None:
    """(B, T) attention_mask (1/True = real token, 0/False = padding) -> (B, 1, 1, T) bool.

    The result broadcasts over heads and queries: every query may attend to the real keys.
    None (no mask) gives None. The one place that turns an attention_mask into an attention
    mask: every model of the course calls it, after checking the mask at its entry
    (`course_lib.validation.require_attention_mask`).
    """
    return None if attention_mask is None else attention_mask.bool()[:, None, None, :]


def _check_config_sizes(config):
    """A config's layer sizes, checked when the config is made (not first when a model is built)."""
    for name in ("d_model", "n_heads", "d_ff"):
        require_positive_int(name, getattr(config, name))
    require_probability("dropout", config.dropout)
    require_positive("layer_norm_eps", config.layer_norm_eps)
    require_divisible("d_model", config.d_model, "n_heads", config.n_heads)
    get_activation(config.activation)                                   # names the bad activation


# --------------------------------------------------------------------------- layers

class TokenPacking:
    """Where the real tokens of a padded (B, T) batch sit, to skip the padding.

    Everything in a layer except attention works token by token (projections, the FFN,
    LayerNorm, residual adds), so it can run on the N real tokens alone, packed as (N, d_model):
    a batch with a quarter of its positions padded does a quarter less of that work. Attention
    needs the (B, T) layout back for a moment (`unpack`, zeros at the padding, which the mask
    hides from every real query). Hugging Face's BERT computes the padded positions too.
    """

    def __init__(self, attention_mask):
        B, T = attention_mask.shape                                        # validated by the caller
        self.batch_size, self.seq_len = B, T
        self.index = attention_mask.reshape(-1).nonzero().squeeze(1)       # (N,) into B*T

    def pack(self, x):
        """(B, T, ...) -> (N, ...): the real tokens, row by row."""
        return x.reshape(self.batch_size * self.seq_len, *x.shape[2:]).index_select(0, self.index)

    def unpack(self, x):
        """(N, ...) -> (B, T, ...), zeros at the padded positions."""
        out = x.new_zeros(self.batch_size * self.seq_len, *x.shape[1:])
        return out.index_copy(0, self.index, x).view(self.batch_size, self.seq_len, *x.shape[1:])


class EncoderLayer(nn.Module):
    """Self-attention then a position-wise FFN, each wrapped in a residual and a LayerNorm.

    Post-LN (norm_first=False, the original Transformer and BERT):
        x = norm1(x + dropout1(self_attn(x)))
        x = norm2(x + dropout2(linear2(dropout(act(linear1(x))))))
    Pre-LN (norm_first=True, GPT-2 and most later models):
        x = x + dropout1(self_attn(norm1(x)))
        x = x + dropout2(ffn(norm2(x)))
    The FFN is `course_lib.feedforward.FeedForward`'s, with its members on the layer itself
    (PyTorch's layout) so state dicts copy from `nn.TransformerEncoderLayer`.

    `dropout` is every dropout's rate unless `attention_dropout` (on the attention
    probabilities) or `activation_dropout` (between the two FFN matrices) say otherwise - BERT
    uses its own attention rate and none between the FFN matrices (`course_lib.bert.bert_layer`).
    fused=True takes PyTorch's `nn.LayerNorm` and `nn.GELU` (one kernel each) instead of the
    course's written-out `LayerNorm` and `GELU`: the same functions (lessons 07 and 10 prove it),
    the same parameter names, faster.

    forward(x, mask) returns x; forward_with_attention(x, mask) returns (x, weights) - two
    methods, so each always returns the same type.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0,
                 activation: str = "relu", norm_first: bool = False, layer_norm_eps: float = 1e-5,
                 *, attention_dropout: float | None = None, activation_dropout: float | None = None,
                 fused: bool = False):
        super().__init__()
        attention_dropout = dropout if attention_dropout is None else attention_dropout
        activation_dropout = dropout if activation_dropout is None else activation_dropout
        norm = nn.LayerNorm if fused else LayerNorm
        self.d_model, self.n_heads, self.norm_first = d_model, n_heads, norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=attention_dropout)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.activation = get_activation(activation, fused=fused)
        # no module at rate 0 (BERT): nn.Dropout(0.0) would be a no-op call per layer
        self.dropout = nn.Dropout(activation_dropout) if activation_dropout else nn.Identity()
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm1 = norm(d_model, eps=layer_norm_eps)
        self.norm2 = norm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x, mask=None, packing: TokenPacking | None = None):
        """x: (B, T, d_model); mask: bool, broadcastable to (B, n_heads, T, T), True = may attend.
        Returns x (B, T, d_model). The attention runs PyTorch's fused kernel (no weights kept).

        packing: a `TokenPacking` of the batch's padding; x is then its (N, d_model) real tokens
        and so is the result (what BERT does with a padded batch).
        """
        return self._forward(x, mask, packing, need_weights=False)[0]

    def forward_with_attention(self, x, mask=None):
        """As forward, through the course's explicit attention, which keeps the weights:
        returns (x (B, T, d_model), weights (B, n_heads, T, T))."""
        return self._forward(x, mask, None, need_weights=True)

    def _forward(self, x, mask, packing, need_weights):
        if self.norm_first:
            a, weights = self._sa_block(self.norm1(x), mask, packing, need_weights)
            x = x + a
            x = x + self._ff_block(self.norm2(x))
        else:
            a, weights = self._sa_block(x, mask, packing, need_weights)
            x = self.norm1(x + a)
            x = self.norm2(x + self._ff_block(x))
        return x, weights

    def _sa_block(self, x, mask, packing, need_weights):
        if packing is not None:
            x = packing.unpack(x)                                       # (B, T, d_model)
        out, weights = self.self_attn(x, x, x, mask=mask, need_weights=need_weights)
        if packing is not None:
            out = packing.pack(out)                                     # (N, d_model)
        return self.dropout1(out), weights       # weights (B, n_heads, T, T) or None

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the encoder's `memory`, then the FFN.

    Post-LN: x = norm1(x + sa(x)); x = norm2(x + ca(x, memory)); x = norm3(x + ffn(x)).
    Pre-LN:  x = x + sa(norm1(x)); x = x + ca(norm2(x), memory); x = x + ffn(norm3(x)).
    Names follow `nn.TransformerDecoderLayer` (`self_attn`, `multihead_attn`, `norm1..3`,
    `dropout1..3`).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0,
                 activation: str = "relu", norm_first: bool = False, layer_norm_eps: float = 1e-5):
        super().__init__()
        self.d_model, self.n_heads, self.norm_first = d_model, n_heads, norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.multihead_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.activation = get_activation(activation)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        """x: (B, T, d_model) targets; memory: (B, S, d_model) encoder output.

        self_mask: bool, broadcastable to (B, n_heads, T, T) - usually causal_mask(T), combined
        with a target padding_mask by `&`. memory_mask: broadcastable to (B, n_heads, T, S),
        usually padding_mask(src_attention_mask). Returns (B, T, d_model).
        """
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), self_mask)
            x = x + self._ca_block(self.norm2(x), memory, memory_mask)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, self_mask))
            x = self.norm2(x + self._ca_block(x, memory, memory_mask))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, mask):
        return self.dropout1(self.self_attn(x, x, x, mask=mask, need_weights=False)[0])

    def _ca_block(self, x, memory, mask):
        # queries from the decoder, keys and values from the encoder output. The explicit path:
        # its weights stay visible to forward hooks on `multihead_attn` (lesson 11 reads them).
        return self.dropout2(self.multihead_attn(x, memory, memory, mask=mask)[0])

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def torch_to_course_state_dict(state_dict: dict) -> dict:
    """Rename a PyTorch `nn.Transformer*` state dict for the course's modules.

    PyTorch packs the three input projections of `nn.MultiheadAttention` into one
    `in_proj_weight` (3·d_model, d_model) in the order q, k, v; the course keeps
    `q_proj`, `k_proj`, `v_proj`. Every other key (out_proj, linear1, norm1, ...) is unchanged.
    """
    require_instance("state_dict", state_dict, dict, "a dict name -> tensor (module.state_dict())")
    out = {}
    for key, value in state_dict.items():
        prefix, _, leaf = key.rpartition("in_proj_")
        if leaf in ("weight", "bias") and key.endswith("in_proj_" + leaf):
            for part, chunk in zip(("q_proj", "k_proj", "v_proj"), value.chunk(3, dim=0)):
                out[f"{prefix}{part}.{leaf}"] = chunk.clone()
        else:
            out[key] = value
    return out


# --------------------------------------------------------------------------- stacks

class TransformerEncoder(nn.Module):
    """`n_layers` EncoderLayers; a Pre-LN stack ends with a final LayerNorm (`norm`), since its
    residual stream is never normalised otherwise. Names match `nn.TransformerEncoder`
    (`layers.0.self_attn...`, `norm`)."""

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0,
                 activation: str = "relu", norm_first: bool = False, layer_norm_eps: float = 1e-5):
        super().__init__()
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff, dropout, activation, norm_first, layer_norm_eps)
            for _ in range(n_layers))
        self.norm = LayerNorm(d_model, eps=layer_norm_eps) if norm_first else None

    def forward(self, x, mask=None):
        """x: (B, T, d_model) -> (B, T, d_model)."""
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x) if self.norm is not None else x

    def forward_with_attention(self, x, mask=None):
        """As forward, keeping every layer's attention: returns (x (B, T, d_model), a list of
        (B, n_heads, T, T) weights, one per layer)."""
        weights = []
        for layer in self.layers:
            x, w = layer.forward_with_attention(x, mask)
            weights.append(w)
        return (self.norm(x) if self.norm is not None else x), weights


class TransformerDecoder(nn.Module):
    """`n_layers` DecoderLayers (+ a final LayerNorm when Pre-LN); names as `nn.TransformerDecoder`."""

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0,
                 activation: str = "relu", norm_first: bool = False, layer_norm_eps: float = 1e-5):
        super().__init__()
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, n_heads, d_ff, dropout, activation, norm_first, layer_norm_eps)
            for _ in range(n_layers))
        self.norm = LayerNorm(d_model, eps=layer_norm_eps) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        """x: (B, T, d_model), memory: (B, S, d_model) -> (B, T, d_model)."""
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask)
        return self.norm(x) if self.norm is not None else x


# --------------------------------------------------------------------------- encoder-decoder

@dataclass
class TransformerConfig:
    """Sizes of the encoder-decoder `Transformer` (the paper's base model: d_model=512,
    n_heads=8, d_ff=2048, 6 + 6 layers, dropout=0.1; the defaults here are CPU-sized)."""
    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256
    n_encoder_layers: int = 2
    n_decoder_layers: int = 2
    dropout: float = 0.0
    activation: str = "relu"
    norm_first: bool = False
    layer_norm_eps: float = 1e-5
    max_len: int = 512              # rows of the sinusoidal table
    scale_embeddings: bool = True   # multiply embeddings by √d_model (lesson 06)
    tie_weights: bool = True        # output projection shares the target embedding (lesson 12)
    share_embeddings: bool = False  # one table for source and target (needs one vocabulary)
    pad_id: int = 0                 # what greedy_decode writes after EOS

    def __post_init__(self):
        # the sizes named as the config names them (the layers would call them d_model, n_layers)
        for name in ("src_vocab_size", "tgt_vocab_size", "max_len"):
            require_positive_int(name, getattr(self, name))
        for name in ("n_encoder_layers", "n_decoder_layers"):
            require_int(name, getattr(self, name), minimum=0)
        require_id("pad_id", self.pad_id, self.tgt_vocab_size, "tgt_vocab_size")
        _check_config_sizes(self)
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(f"share_embeddings: needs src_vocab_size == tgt_vocab_size, got "
                             f"{self.src_vocab_size} and {self.tgt_vocab_size}")


class Transformer(nn.Module):
    """Encoder-decoder Transformer (Vaswani et al. 2017) with sinusoidal positions.

    src (B, S) ids -> encoder -> memory (B, S, d_model)
    tgt_in (B, T) ids (BOS + target[:-1]) -> decoder(memory) -> logits (B, T, tgt_vocab_size)
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        c = self.config = require_instance("config", config, TransformerConfig)
        self.src_embed = ScaledEmbedding(c.src_vocab_size, c.d_model, scale=c.scale_embeddings)
        self.tgt_embed = (self.src_embed if c.share_embeddings else
                          ScaledEmbedding(c.tgt_vocab_size, c.d_model, scale=c.scale_embeddings))
        self.pos = SinusoidalPositionalEncoding(c.d_model, c.max_len)
        self.embed_dropout = nn.Dropout(c.dropout)
        layer_args = (c.d_model, c.n_heads, c.d_ff, c.dropout, c.activation, c.norm_first,
                      c.layer_norm_eps)
        self.encoder = TransformerEncoder(c.n_encoder_layers, *layer_args)
        self.decoder = TransformerDecoder(c.n_decoder_layers, *layer_args)
        self.lm_head = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
        if c.tie_weights:
            # (tgt_vocab_size, d_model) is the shape of both: no transpose needed
            self.lm_head.weight = self.tgt_embed.weight

    def encode(self, src, src_attention_mask=None):
        """src: (B, S) ids; src_attention_mask: (B, S) 1 = token, 0 = padding -> (B, S, d_model)."""
        require_token_ids("src", src, self.config.src_vocab_size, self.config.max_len)
        if src_attention_mask is not None:
            require_attention_mask("src_attention_mask", src_attention_mask, src, "src")
        x = self.embed_dropout(self.pos(self.src_embed(src)))          # (B, S, d_model)
        return self.encoder(x, padding_mask(src_attention_mask))       # mask (B, 1, 1, S)

    def decode(self, tgt_in, memory, src_attention_mask=None, tgt_attention_mask=None):
        """tgt_in: (B, T) ids, memory: (B, S, d_model) -> logits (B, T, tgt_vocab_size)."""
        require_token_ids("tgt_in", tgt_in, self.config.tgt_vocab_size, self.config.max_len)
        self_mask = causal_mask(tgt_in.shape[-1], device=tgt_in.device)  # (T, T)
        if tgt_attention_mask is not None:
            require_attention_mask("tgt_attention_mask", tgt_attention_mask, tgt_in, "tgt_in")
            self_mask = self_mask & padding_mask(tgt_attention_mask)     # (B, 1, T, T)
        memory_mask = padding_mask(src_attention_mask)                  # (B, 1, 1, S)
        y = self.embed_dropout(self.pos(self.tgt_embed(tgt_in)))        # (B, T, d_model)
        y = self.decoder(y, memory, self_mask, memory_mask)
        return self.lm_head(y)                                          # (B, T, tgt_vocab_size)

    def forward(self, src, tgt_in, src_attention_mask=None, tgt_attention_mask=None):
        """Teacher-forced logits (B, T, tgt_vocab_size) for the next token at every position."""
        memory = self.encode(src, src_attention_mask)
        require_same_batch("tgt_in", tgt_in, "src", src)     # memory of batch 1 would broadcast
        return self.decode(tgt_in, memory, src_attention_mask, tgt_attention_mask)

    @torch.no_grad()
    def greedy_decode(self, src, max_len: int, bos_id: int, eos_id: int | None = None,
                      src_attention_mask=None):
        """Generate up to `max_len` tokens by arg-max, starting from BOS.

        Returns (B, max_len) ids without the BOS; after a sequence emits `eos_id` the rest of
        its row is `config.pad_id`. Runs in eval mode (dropout off), restoring the mode after.
        """
        if not is_int(max_len) or not 1 <= max_len <= self.config.max_len:
            raise ValueError(f"max_len: expected 1..{self.config.max_len} (the position table), "
                             f"got {max_len!r}")
        for name, value in (("bos_id", bos_id), ("eos_id", eos_id)):
            if value is not None:
                require_id(name, value, self.config.tgt_vocab_size, "tgt_vocab_size")
        was_training = self.training
        self.eval()
        memory = self.encode(src, src_attention_mask)                   # encoded once
        ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        for _ in range(max_len):
            logits = self.decode(ys, memory, src_attention_mask)        # (B, t, V)
            nxt = logits[:, -1].argmax(-1)                              # (B,)
            nxt = nxt.masked_fill(done, self.config.pad_id)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            if eos_id is not None:
                done |= nxt == eos_id
                if done.all():
                    break
        self.train(was_training)
        out = ys[:, 1:]
        if out.shape[1] < max_len:                                      # every row ended early
            pad = out.new_full((out.shape[0], max_len - out.shape[1]), self.config.pad_id)
            out = torch.cat([out, pad], dim=1)
        return out                                                      # (B, max_len)


# --------------------------------------------------------------------------- decoder-only

@dataclass
class CausalLMConfig:
    """A GPT-style decoder-only language model (lessons 09, 12, 20)."""
    vocab_size: int
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256
    n_layers: int = 2
    dropout: float = 0.0
    activation: str = "gelu"
    norm_first: bool = True
    layer_norm_eps: float = 1e-5
    max_len: int = 512
    positions: str = "learned"      # "learned" (GPT) or "sinusoidal"
    scale_embeddings: bool = False  # GPT does not scale
    tie_weights: bool = True

    def __post_init__(self):
        require_positive_int("vocab_size", self.vocab_size)
        require_positive_int("max_len", self.max_len)
        require_int("n_layers", self.n_layers, minimum=0)
        _check_config_sizes(self)
        require_choice("positions", self.positions, ("learned", "sinusoidal"))


class CausalLM(nn.Module):
    """input_ids (B, T) -> logits (B, T, vocab_size) for the next token; a stack of
    EncoderLayers with a causal mask (a decoder without cross-attention)."""

    def __init__(self, config: CausalLMConfig):
        super().__init__()
        c = self.config = require_instance("config", config, CausalLMConfig)
        self.embed = ScaledEmbedding(c.vocab_size, c.d_model, scale=c.scale_embeddings)
        self.pos = (LearnedPositionalEmbedding(c.max_len, c.d_model) if c.positions == "learned"
                    else SinusoidalPositionalEncoding(c.d_model, c.max_len))
        self.embed_dropout = nn.Dropout(c.dropout)
        self.blocks = TransformerEncoder(c.n_layers, c.d_model, c.n_heads, c.d_ff, c.dropout,
                                         c.activation, c.norm_first, c.layer_norm_eps)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_weights:
            self.lm_head.weight = self.embed.weight

    def forward(self, input_ids, attention_mask=None):
        """input_ids: (B, T); attention_mask: optional (B, T) 1 = token, 0 = padding.
        Returns logits (B, T, vocab_size)."""
        x, mask = self._embed(input_ids, attention_mask)
        return self.lm_head(self.blocks(x, mask))                           # (B, T, vocab_size)

    def forward_with_attention(self, input_ids, attention_mask=None):
        """As forward, keeping the attention: returns (logits (B, T, vocab_size), a list of
        (B, n_heads, T, T) weights, one per layer)."""
        x, mask = self._embed(input_ids, attention_mask)
        x, weights = self.blocks.forward_with_attention(x, mask)
        return self.lm_head(x), weights

    def _embed(self, input_ids, attention_mask):
        require_token_ids("input_ids", input_ids, self.config.vocab_size, self.config.max_len)
        mask = causal_mask(input_ids.shape[1], device=input_ids.device)     # (T, T)
        if attention_mask is not None:
            require_attention_mask("attention_mask", attention_mask, input_ids)
            mask = mask & padding_mask(attention_mask)                        # (B, 1, T, T)
        return self.embed_dropout(self.pos(self.embed(input_ids))), mask    # (B, T, d_model)

    @torch.no_grad()
    def generate(self, input_ids, max_new_tokens: int):
        """Greedy continuation: (B, T) -> (B, T + max_new_tokens). Eval mode, restored after."""
        require_int("max_new_tokens", max_new_tokens, minimum=0)
        require_token_ids("input_ids", input_ids, self.config.vocab_size)  # also when max_new_tokens=0
        was_training = self.training
        self.eval()
        for _ in range(max_new_tokens):
            nxt = self(input_ids[:, -self.config.max_len:])[:, -1].argmax(-1)  # (B,)
            input_ids = torch.cat([input_ids, nxt[:, None]], dim=1)
        self.train(was_training)
        return input_ids
