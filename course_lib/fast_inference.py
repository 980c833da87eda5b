"""Making a trained BERT cheaper to run on a CPU (lesson 25): ONNX Runtime (fp32 and int8, exported
once and cached), low-rank feed-forward matrices, fewer layers, and the measurements that judge
every variant (size on disk, latency, fidelity of the sentence embeddings).

The int8 arithmetic itself (per-tensor and per-channel scales, PyTorch's dynamic int8 kernels) is
`course_lib.quantization`. `LowRankLinear`, `low_rank_ffn` and `first_layers` stay here: they are
not quantisation but the lesson's other ways to a cheaper model, built from the same trained
weights and judged by the same measurements (`forward_flops` counts their factors, `embed` and
`size_on_disk` compare them).

    session = onnx_session(model, int8=True, per_channel=True, cache_dir="build/cache")
    vectors = embed(session, batch)                         # mean-pooled sentence embeddings
    smaller = low_rank_ffn(model, rank=64)                  # feed-forward matrices of rank 64
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import inspect
import io
import logging
import random
import statistics
import time
import warnings
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from . import cache
from .pooling import mean_pooling
from .validation import is_int

# ---------------------------------------------------------------------------------------------
# Cheaper models without int8: low rank, fewer layers
# ---------------------------------------------------------------------------------------------


class LowRankLinear(nn.Module):
    """x -> x V^T U^T + b: an (out, in) matrix replaced by (out, r) @ (r, in), the best rank-r
    approximation in Frobenius norm (truncated SVD, Eckart-Young)."""

    def __init__(self, linear: nn.Linear, rank: int):
        super().__init__()
        out_features, in_features = linear.weight.shape
        if not is_int(rank) or not 1 <= rank <= min(out_features, in_features):   # 0: the bias alone
            raise ValueError(f"rank: expected 1..{min(out_features, in_features)} for a "
                             f"{out_features}x{in_features} weight, got {rank}")
        U, S, Vh = torch.linalg.svd(linear.weight.detach().to(torch.float32), full_matrices=False)
        root = S[:rank].sqrt()
        self.down = nn.Linear(in_features, rank, bias=False)            # (r, in)
        self.up = nn.Linear(rank, out_features, bias=linear.bias is not None)   # (out, r)
        with torch.no_grad():
            self.down.weight.copy_(root[:, None] * Vh[:rank])
            self.up.weight.copy_(U[:, :rank] * root)
            if linear.bias is not None:
                self.up.bias.copy_(linear.bias)
        self.to(linear.weight.device)

    def forward(self, x):
        return self.up(self.down(x))


def _ffn_linears(model: nn.Module) -> list[tuple[nn.Module, str]]:
    """(parent, attribute) of every feed-forward nn.Linear: the course BertModel's
    `layers.N.linear1/linear2`, or Hugging Face's `encoder.layer.N.intermediate.dense` /
    `encoder.layer.N.output.dense` (not `attention.output.dense`)."""
    found = []
    if hasattr(model, "layers"):
        for layer in model.layers:
            found += [(layer, "linear1"), (layer, "linear2")]
    elif hasattr(model, "encoder") and hasattr(model.encoder, "layer"):
        for layer in model.encoder.layer:
            found += [(layer.intermediate, "dense"), (layer.output, "dense")]
    else:
        raise ValueError(f"model: expected a course BertModel (.layers) or a Hugging Face "
                         f"BertModel (.encoder.layer), got {type(model).__name__}")
    return found


def low_rank_ffn(model: nn.Module, rank: int) -> nn.Module:
    """A copy of `model` with every feed-forward matrix replaced by its best rank-`rank`
    approximation (`LowRankLinear`); attention and embeddings unchanged."""
    model = copy.deepcopy(model)
    for parent, name in _ffn_linears(model):
        setattr(parent, name, LowRankLinear(getattr(parent, name), rank))
    return model


def first_layers(model: nn.Module, num_layers: int) -> nn.Module:
    """A copy of `model` keeping only its first `num_layers` encoder layers (a shallower model
    made without training; lesson 24 trains such a student properly, by distillation)."""
    model = copy.deepcopy(model)
    stack = model.layers if hasattr(model, "layers") else model.encoder.layer
    if not is_int(num_layers) or not 1 <= num_layers <= len(stack):    # -1 would drop the last one
        raise ValueError(f"num_layers: expected 1..{len(stack)}, got {num_layers}")
    del stack[num_layers:]
    if hasattr(model, "config") and hasattr(model.config, "num_hidden_layers"):
        model.config = copy.deepcopy(model.config)
        model.config.num_hidden_layers = num_layers
    return model


# ---------------------------------------------------------------------------------------------
# ONNX export, run by ONNX Runtime
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
    """This module, the course_lib module that defines the model's class and every course_lib
    module either imports (bert.py -> transformer.py -> attention.py ...). A Hugging Face model's
    code is covered by the transformers version instead."""
    files = [Path(__file__)]
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


#: One-off costs of the last `onnx_session` calls that had to build a file: {"export_s": ..,
#: "quantize_s": ..}. Empty entries mean the cached file was used.
LAST_BUILD: dict[str, float] = {}


def onnx_file(model: nn.Module, *, int8: bool, per_channel: bool = True,
              cache_dir: str | Path | None = None, opset: int = 17) -> Path:
    """The model exported to ONNX (legacy TorchScript exporter, `dynamo=False`, dynamic batch and
    sequence axes), optionally quantised to int8 by ONNX Runtime (`quantize_dynamic`, weights
    per output channel when `per_channel`). Cached under `cache_dir` by `onnx_cache_key`: the
    weights, every config field, the library versions and the course source that produced it.
    Files are written under a name unique to the process and renamed, so parallel runs can
    build the same file without colliding."""
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache_dir.mkdir(parents=True, exist_ok=True)
    base_key = onnx_cache_key(model, opset)
    fp32_path = cache_dir / f"encoder-{base_key}-fp32.onnx"
    if not fp32_path.exists():
        start = time.perf_counter()
        _export(model, fp32_path, opset)
        LAST_BUILD["export_s"] = time.perf_counter() - start
    if not int8:
        return fp32_path
    int8_path = cache_dir / f"encoder-{base_key}-int8-{'channel' if per_channel else 'tensor'}.onnx"
    if not int8_path.exists():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        start = time.perf_counter()
        root = logging.getLogger()
        level, root.level = root.level, logging.ERROR     # "consider pre-processing" notices
        try:
            with cache.atomic_path(int8_path) as tmp:
                quantize_dynamic(str(fp32_path), str(tmp), weight_type=QuantType.QInt8,
                                 per_channel=per_channel)
        finally:
            root.setLevel(level)
        LAST_BUILD["quantize_s"] = time.perf_counter() - start
    return int8_path


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


def onnx_session(model: nn.Module, *, int8: bool, per_channel: bool = True,
                 cache_dir: str | Path | None = None, num_threads: int | None = None) -> OnnxEncoder:
    """`model` exported to ONNX (cached, see `onnx_file`) and loaded into ONNX Runtime (CPU)."""
    return OnnxEncoder(onnx_file(model, int8=int8, per_channel=per_channel, cache_dir=cache_dir),
                       num_threads=num_threads)


# ---------------------------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------------------------


def size_on_disk(model) -> int:
    """Bytes of the saved weights: the ONNX file of an `OnnxEncoder`, else `torch.save` of the
    state dict (int8 packed weights included)."""
    if isinstance(model, OnnxEncoder):
        return model.size_bytes()
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getbuffer().nbytes


def _hidden(model, batch: dict) -> torch.Tensor:
    out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                token_type_ids=batch.get("token_type_ids"))
    return out.last_hidden_state              # course, Hugging Face and ONNX Runtime alike


def embed(model, batch: dict) -> torch.Tensor:
    """Mean-pooled sentence embeddings (B, H) in float32, padding excluded from the mean
    (`course_lib.pooling.mean_pooling`). `model`: a course or Hugging Face BertModel (any
    dtype, int8 included) or an `OnnxEncoder`; `batch`: dict of input_ids and attention_mask
    (B, T), optionally token_type_ids."""
    with torch.inference_mode():
        hidden = _hidden(model, batch).to(torch.float32)                 # (B, T, H)
    return mean_pooling(hidden, batch["attention_mask"].to(hidden.device))


def pad_batch(encodings: list[dict], pad_id: int = 0) -> dict:
    """Tokenizer outputs (dicts of lists, one per text) -> a dict of (B, T) tensors, right-padded."""
    T = max(len(e["input_ids"]) for e in encodings)
    out = {}
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        fill = pad_id if key == "input_ids" else 0
        out[key] = torch.tensor([list(e[key]) + [fill] * (T - len(e[key])) for e in encodings])
    return out


def time_interleaved(runs: dict[str, Callable[[], object]], repeats: int = 5, warmup: int = 1,
                     seed: int | None = None, sync: Callable[[], None] | None = None,
                     inference_mode: bool = True) -> dict[str, list[float]]:
    """Seconds per call of every function, measured round-robin: each round calls every
    function once, so a slow spell of a shared machine hits all of them alike. The order of a
    round is rotated by one each round, or shuffled when `seed` is given (then no function
    always follows the same neighbour). Returns {name: [seconds of each round]}: take the
    median, or the median of per-round ratios (`paired_ratio`).

    sync: called after the warm-up and after every call, inside the timed span: on a GPU pass
    `torch.cuda.synchronize`, or the clock stops before the kernels have run (`course bench`).
    inference_mode: run under `torch.inference_mode()` (no autograd bookkeeping); False leaves
    autograd as the caller set it, to time code that needs gradients (a training step)."""
    names = list(runs)
    rng = random.Random(seed)
    sync = sync or (lambda: None)
    with torch.inference_mode() if inference_mode else contextlib.nullcontext():
        for _ in range(warmup):
            for name in names:
                runs[name]()
        sync()
        times = {name: [] for name in names}
        for r in range(repeats):
            if seed is None:
                order = names[r % len(names):] + names[:r % len(names)]
            else:
                order = rng.sample(names, len(names))
            for name in order:
                start = time.perf_counter()
                runs[name]()
                sync()
                times[name].append(time.perf_counter() - start)
    return times


def paired_ratio(times: dict[str, list[float]], reference: str, case: str) -> float:
    """Median over rounds of (reference's time / case's time) within the same round: a paired
    statistic, so load that slows a whole round cancels out. Above 1: `case` is faster."""
    if len(times[reference]) != len(times[case]):            # zip would drop rounds
        raise ValueError(f"times[{case!r}]: expected {len(times[reference])} rounds like "
                         f"times[{reference!r}], got {len(times[case])}")
    return statistics.median(r / c for r, c in zip(times[reference], times[case]))


def spread(values) -> tuple[float, float]:
    """(25th, 75th percentile) of the values: the interquartile range of the rounds."""
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def median(values) -> float:
    return statistics.median(values)


def bf16_supported() -> bool:
    """Whether this CPU has native bf16 dot products (AVX512-BF16 or AMX); without them,
    PyTorch emulates bf16 matmuls and they are slower than float32."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(f in flags.split() for f in ("avx512_bf16", "amx_bf16"))


def forward_flops(model: nn.Module, seq_len: int, batch_size: int = 1) -> int:
    """2 x the multiply-adds of a forward pass over (batch_size, seq_len) tokens: every
    nn.Linear (float or int8, low-rank factors included) plus attention's two (T x T) products
    per layer. Set by the shapes alone: no timing."""
    limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if isinstance(limit, int) and seq_len > limit:
        raise ValueError(f"seq_len: expected at most max_position_embeddings={limit}, got {seq_len}")
    tokens = batch_size * seq_len
    flops = 0
    for module in model.modules():
        weight = getattr(module, "weight", None)
        if callable(weight):                                 # torch's dynamic int8 Linear
            weight = weight()
        if isinstance(module, nn.Linear) or type(module).__name__ == "Linear":
            flops += 2 * tokens * weight.shape[0] * weight.shape[1]
    config = getattr(model, "config", None)
    if config is not None:
        layers = len(model.layers) if hasattr(model, "layers") else len(model.encoder.layer)
        flops += layers * 2 * 2 * tokens * seq_len * config.hidden_size   # QK^T and AV
    return flops
