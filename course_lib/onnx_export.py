"""A BERT exported to ONNX and run by ONNX Runtime on the CPU (lesson 25): the export, its cache,
ONNX Runtime's BERT graph optimizer, int8 on top, and a session behind a BertModel's call.

Two exports of the same weights:

* plain (`fused=False`): the model as it runs in PyTorch, attention through
  `F.scaled_dot_product_attention`. ONNX Runtime then runs the unfused MatMul/Softmax chain:
  its BERT optimizer does not recognise the exporter's SDPA graph (see `fusable_copy`).
* fused (`fused=True`): the model exported in the form ONNX Runtime's BERT optimizer
  recognises (`fusable_copy`: same weights, same function), then rewritten by that optimizer
  (`onnxruntime.transformers.optimizer.optimize_model`) into its fused kernels: Attention,
  EmbedLayerNormalization, SkipLayerNormalization, BiasGelu. int8 is quantised from that graph.

    session = onnx_session(model, int8=True, fused=True)           # cached under build/cache
    fused_operator_counts(session.path)     # {"Attention": 6, "EmbedLayerNormalization": 1, ...}
"""
from __future__ import annotations

import collections
import copy
import dataclasses
import hashlib
import inspect
import math
import time
import types
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from . import cache

# ---------------------------------------------------------------------------------------------
# The export
# ---------------------------------------------------------------------------------------------


class _KeywordEncoder(nn.Module):
    """Calls the model with keyword arguments and returns only the token vectors. The legacy
    exporter passes inputs positionally, and Hugging Face's `BertModel.forward` has other
    positional parameters than (input_ids, attention_mask, token_type_ids)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids)
        return out.last_hidden_state                                    # (B, T, H)


def _export(model: nn.Module, path: Path, opset: int) -> None:
    wrapper = _KeywordEncoder(copy.deepcopy(model).cpu().float().eval())
    vocab_size = getattr(getattr(model, "config", None), "vocab_size", 100)
    ids = (torch.arange(32).reshape(2, 16) * 7 + 1) % vocab_size          # (2, 16) valid ids
    example = (ids, torch.ones_like(ids), torch.zeros_like(ids))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    with warnings.catch_warnings(), torch.no_grad(), cache.atomic_path(path) as tmp:
        warnings.simplefilter("ignore")          # tracer warnings about Python-side checks
        torch.onnx.export(wrapper, example, str(tmp), input_names=names,
                          output_names=["last_hidden_state"], dynamic_axes=axes,
                          opset_version=opset, dynamo=False)


# ---------------------------------------------------------------------------------------------
# The export ONNX Runtime's BERT optimizer recognises
# ---------------------------------------------------------------------------------------------
#
# The optimizer fuses by matching node patterns (onnxruntime/transformers/fusion_attention.py,
# FusionAttention.fuse; fusion_embedlayer.py, FusionEmbedLayerNoMask.fuse_bert). The course's
# model, exported as it runs, misses them in three places:
#
# 1. The legacy exporter writes F.scaled_dot_product_attention (torch/onnx/symbolic_opset14.py)
#    as Mul(q, sqrt(scale)) and Mul(k^T, sqrt(scale)) before the QK^T MatMul, a boolean mask as
#    Where(mask, 0, -inf) -> Add, and Softmax -> IsNaN -> Where before the MatMul with V. The
#    optimizer's qk paths (fusion_attention.py, `qk_paths`) all start with the MatMul with V's
#    parent being Softmax: the Where in between matches none of them.
# 2. With the scores scaled by a Mul (q k^T * scale, as the course's own attention writes it)
#    and the additive mask made by a Mul too, the mask match `match_parent_paths(add_qk,
#    [(["Mul", "Sub", "Cast", "Unsqueeze", "Unsqueeze"], [None, ...]), ...])` takes the first
#    Mul parent of the Add (input_index None: onnx_model.py, OnnxModel.match_parent) - the
#    scale - and fails. Dividing by sqrt(d) (BERT's original formulation, `qk_paths["path1"]`)
#    leaves the mask's Mul as the only one.
# 3. The course's positions are torch.arange(T), a (T,) vector broadcast over the batch: the
#    embedding fusion wants (B, T) position ids, a slice of a position_ids buffer (BERT) or
#    Range -> Unsqueeze -> Expand to input_ids' shape (DistilBERT,
#    `match_position_embedding_distilbert`). EmbedLayerNormalization also needs the fused
#    Attention below it (`check_attention_subgraph`), so it fails with (1) too.
#
# `fusable_copy` gives the exporter the formulation the optimizer knows, on a copy: the same
# weights and the same function (the test compares the outputs, padding included), so the
# course's model stays the reference and its PyTorch path keeps its fused SDPA kernel and
# its token packing.


def _fusable_attention(self, query, key, value, mask=None, need_weights: bool = False):
    """MultiHeadAttention.forward as BERT's original code writes it: scores divided by
    sqrt(head_dim), padding masked by adding (1 - mask) * most negative float, softmax, @ v.
    Equal to the course's attention wherever a query has at least one real key."""
    from .attention import merge_heads, split_heads

    q = split_heads(self.q_proj(query), self.n_heads)               # (B, nh, T_q, d)
    k = split_heads(self.k_proj(key), self.n_heads)
    v = split_heads(self.v_proj(value), self.n_heads)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
    if mask is not None:                                            # bool (B, 1, 1, T_k)
        scores = scores + (1.0 - mask.to(scores.dtype)) * torch.finfo(scores.dtype).min
    out = torch.matmul(F.softmax(scores, dim=-1), v)                # (B, nh, T_q, d)
    return self.out_proj(merge_heads(out)), None


def _fusable_embeddings(self, input_ids, token_type_ids=None):
    """BertEmbeddings.forward with (B, T) position ids (Range -> Unsqueeze -> Expand)."""
    if token_type_ids is None:
        token_type_ids = torch.zeros_like(input_ids)
    positions = torch.arange(input_ids.shape[1], device=input_ids.device)
    positions = positions.unsqueeze(0).expand_as(input_ids)                       # (B, T)
    x = (self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
         + self.position_embeddings(positions))
    return self.dropout(self.LayerNorm(x))


def fusable_copy(model: nn.Module) -> nn.Module:
    """A copy of `model` (eval, CPU, float32) whose export ONNX Runtime's BERT optimizer fuses:
    a course model's attention and embeddings run the formulations above; a Hugging Face
    model runs its eager attention (its SDPA export is not recognised either)."""
    from .attention import MultiHeadAttention
    from .bert import BertEmbeddings

    model = copy.deepcopy(model).cpu().float().eval()
    if hasattr(model, "set_attn_implementation"):                   # Hugging Face
        model.set_attn_implementation("eager")
        return model
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            module.forward = types.MethodType(_fusable_attention, module)
        elif isinstance(module, BertEmbeddings):
            module.forward = types.MethodType(_fusable_embeddings, module)
    return model


def _heads_and_width(model: nn.Module) -> tuple[int, int]:
    config = model.config
    return config.num_attention_heads, config.hidden_size


def optimize_bert(src: Path, dst: Path, num_heads: int, hidden_size: int) -> dict[str, int]:
    """ONNX Runtime's BERT optimizer (`optimize_model(model_type="bert")` with its default
    opt_level for BERT: ONNX Runtime's basic, hardware-independent rewrites, then its BERT
    fusions) from `src` to `dst`; returns its fused-operator statistics."""
    from onnxruntime.transformers import optimizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optimized = optimizer.optimize_model(str(src), model_type="bert", num_heads=num_heads,
                                             hidden_size=hidden_size)
    with cache.atomic_path(dst) as tmp:
        optimized.save_model_to_file(str(tmp))
    return optimized.get_fused_operator_statistics()


#: ONNX Runtime's fused BERT operators and their int8 forms, as `fused_operator_counts` counts them.
FUSED_OPERATORS = ("Attention", "MultiHeadAttention", "EmbedLayerNormalization",
                   "SkipLayerNormalization", "BiasGelu", "FastGelu", "Gelu", "LayerNormalization",
                   "QAttention", "DynamicQuantizeMatMul", "MatMulInteger", "DynamicQuantizeLinear")


def fused_operator_counts(path: str | Path) -> dict[str, int]:
    """{operator: count} of an ONNX file's nodes for ONNX Runtime's fused BERT operators and
    the int8 operators (`FUSED_OPERATORS`), zeros included, plus "MatMul" and "Softmax": the
    unfused ops a fused graph no longer has (Softmax) or has fewer of."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    counts = collections.Counter(node.op_type for node in graph.node)
    return {name: counts.get(name, 0) for name in (*FUSED_OPERATORS, "MatMul", "Softmax")}


# ---------------------------------------------------------------------------------------------
# The cache
# ---------------------------------------------------------------------------------------------


def state_digest(model: nn.Module) -> str:
    """sha256 of the model's class and every tensor of its state dict (names, dtypes, bytes)."""
    digest = hashlib.sha256(type(model).__qualname__.encode())
    for name, tensor in model.state_dict().items():
        if isinstance(tensor, torch.Tensor):
            t = tensor.detach().cpu().contiguous()
            digest.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
            digest.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return digest.hexdigest()


def _config_dict(model: nn.Module) -> dict:
    """Every setting of the model's config, including those not in its state dict (heads,
    layer_norm_eps, hidden_act) and Hugging Face's attention implementation."""
    config = getattr(model, "config", None)
    if config is None:
        return {}
    if hasattr(config, "to_dict"):
        settings = dict(config.to_dict())
    elif dataclasses.is_dataclass(config):
        settings = dataclasses.asdict(config)
    else:
        settings = dict(vars(config))
    settings["attn_implementation"] = getattr(config, "_attn_implementation", None)
    return settings


def _model_sources(model: nn.Module) -> list[Path]:
    """This module, the quantisation settings (`course_lib.quantization`), the course_lib module
    that defines the model's class and every course_lib module either imports (bert.py ->
    transformer.py -> attention.py ...). A Hugging Face model's code is covered by the
    transformers version instead."""
    files = [Path(__file__), Path(__file__).with_name("quantization.py")]
    for cls in type(model).__mro__:
        source = Path(inspect.getsourcefile(cls) or "") if cls.__module__.startswith("course_lib") else None
        if source is not None and source.exists():
            files.append(source)
    return cache.source_modules(*files)


def onnx_cache_key(model: nn.Module, opset: int = 17) -> str:
    """The key of the model's ONNX files: its weights, its config (every field), the opset, the
    torch/onnx/onnxruntime/transformers versions and the course source that defines and exports
    it (see `course_lib.cache`)."""
    inputs = {"weights": state_digest(model), "config": _config_dict(model), "opset": opset}
    return cache.cache_key(inputs, cache.versions("torch", "onnx", "onnxruntime", "transformers"),
                           cache.source_digest(_model_sources(model)))


def default_cache_dir() -> Path:
    return cache.cache_dir("onnx")


#: One-off costs of the last `onnx_file` calls that had to build a file: {"export_s": ..,
#: "optimize_s": .., "quantize_s": ..}. Empty entries mean the cached file was used.
LAST_BUILD: dict[str, float] = {}


def onnx_file(model: nn.Module, *, int8: bool, per_channel: bool = True, fused: bool = False,
              cache_dir: str | Path | None = None, opset: int = 17) -> Path:
    """The model exported to ONNX (legacy TorchScript exporter, `dynamo=False`, dynamic batch and
    sequence axes), optionally quantised to int8 by ONNX Runtime (`quantize_dynamic`, weights
    per output channel when `per_channel`; `course_lib.quantization.quantize_onnx`).

    fused: export `fusable_copy(model)` and run ONNX Runtime's BERT optimizer on it
    (`optimize_bert`): Attention, EmbedLayerNormalization, SkipLayerNormalization and BiasGelu
    in the graph; int8 is then quantised from the fused graph (Attention -> QAttention).

    Cached under `cache_dir` by `onnx_cache_key`: the weights, every config field, the library
    versions and the course source that produced it. Files are written under a name unique to
    the process and renamed, so parallel runs can build the same file without colliding."""
    from .quantization import quantize_onnx

    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache_dir.mkdir(parents=True, exist_ok=True)
    base_key = onnx_cache_key(model, opset)
    kind = "fused-" if fused else ""
    fp32_path = cache_dir / f"encoder-{base_key}-{kind}fp32.onnx"
    if not fp32_path.exists():
        start = time.perf_counter()
        if fused:
            exported = cache_dir / f"encoder-{base_key}-fusable-export.onnx"
            if not exported.exists():
                _export(fusable_copy(model), exported, opset)
            LAST_BUILD["export_s"] = time.perf_counter() - start
            start = time.perf_counter()
            optimize_bert(exported, fp32_path, *_heads_and_width(model))
            LAST_BUILD["optimize_s"] = time.perf_counter() - start
        else:
            _export(model, fp32_path, opset)
            LAST_BUILD["export_s"] = time.perf_counter() - start
    if not int8:
        return fp32_path
    int8_path = cache_dir / f"encoder-{base_key}-{kind}int8-{'channel' if per_channel else 'tensor'}.onnx"
    if not int8_path.exists():
        start = time.perf_counter()
        with cache.atomic_path(int8_path) as tmp:
            quantize_onnx(fp32_path, tmp, per_channel=per_channel)
        LAST_BUILD["quantize_s"] = time.perf_counter() - start
    return int8_path


# ---------------------------------------------------------------------------------------------
# ONNX Runtime sessions
# ---------------------------------------------------------------------------------------------


def ort_options(num_threads: int | None = None, fusions: bool = True):
    """ONNX Runtime session options for a fair CPU comparison: `num_threads` intra-op threads
    (default: torch's count), one inter-op thread, threads that sleep rather than spin after a
    call, and all graph optimisations (`fusions=False`: none, to see what the fusions add)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    # The same number of threads as torch, so that the comparison is fair.
    options.intra_op_num_threads = num_threads or torch.get_num_threads()
    options.inter_op_num_threads = 1
    options.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if fusions
                                         else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    options.log_severity_level = 3
    # Threads that spin after a call would steal the CPU from whatever is timed next
    # (torch, in an interleaved benchmark): let them sleep, as torch's do.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


@dataclasses.dataclass
class EncoderOutput:
    """An ONNX Runtime encoder's result, named as a BertModel's (no pooler in the graph)."""
    last_hidden_state: torch.Tensor                                      # (B, T, H)


class OnnxEncoder:
    """An ONNX Runtime session behind the call signature of a BertModel:
    `encoder(input_ids=, attention_mask=, token_type_ids=)` -> an output whose
    `last_hidden_state` is a torch tensor, as a course or Hugging Face BertModel's."""

    def __init__(self, path: Path, num_threads: int | None = None, fusions: bool = True):
        import onnxruntime as ort

        self.path = Path(path)
        self.session = ort.InferenceSession(str(path), ort_options(num_threads, fusions),
                                            providers=["CPUExecutionProvider"])

    def __call__(self, input_ids, attention_mask=None, token_type_ids=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        feeds = {"input_ids": input_ids.cpu().numpy(),
                 "attention_mask": attention_mask.cpu().numpy(),
                 "token_type_ids": token_type_ids.cpu().numpy()}
        (hidden,) = self.session.run(["last_hidden_state"], feeds)
        return EncoderOutput(torch.from_numpy(hidden))

    def size_bytes(self) -> int:
        return self.path.stat().st_size

    def fused_operators(self) -> dict[str, int]:
        """`fused_operator_counts` of this session's file (before ONNX Runtime's own
        session-time fusions, which `ort_options(fusions=...)` switches)."""
        return fused_operator_counts(self.path)


def onnx_session(model: nn.Module, *, int8: bool, per_channel: bool = True, fused: bool = False,
                 cache_dir: str | Path | None = None, num_threads: int | None = None) -> OnnxEncoder:
    """`model` exported to ONNX (cached, see `onnx_file`) and loaded into ONNX Runtime (CPU)."""
    return OnnxEncoder(onnx_file(model, int8=int8, per_channel=per_channel, fused=fused,
                                 cache_dir=cache_dir), num_threads=num_threads)
