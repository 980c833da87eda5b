"""Measuring the cheaper BERTs of lesson 25: size on disk, the fidelity of their sentence
embeddings, and the work of a forward pass (FLOPs).

The cheaper models themselves come from one module each:
* `course_lib.quantization`: int8 weights (per tensor, per channel), PyTorch's dynamic int8
  kernels and ONNX Runtime's dynamic int8 (`quantize_onnx`);
* `course_lib.onnx_export`: the ONNX export (plain, or fused by ONNX Runtime's BERT optimizer),
  its cache and the ONNX Runtime session (`onnx_session`, `OnnxEncoder`);
* `course_lib.model_surgery`: low-rank feed-forward matrices and fewer layers;
and the timing statistics are `course_lib.timing`, shared with `course bench`.

    session = onnx_export.onnx_session(model, int8=True, per_channel=True, fused=True)
    vectors = embed(session, batch)                         # mean-pooled sentence embeddings
    forward_flops(model, seq_len=128)                       # the work of one forward pass
"""
from __future__ import annotations

import io
from pathlib import Path

import torch
from torch import nn

from .onnx_export import OnnxEncoder
from .pooling import mean_pooling


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
