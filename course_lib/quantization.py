"""int8 weights (lesson 25): symmetric quantisation written in the open, and PyTorch's dynamic int8
kernels applied to a whole model.

Quantisation here is *symmetric* int8: w ≈ scale · q with q an integer in [-127, 127].
"Per tensor" uses one scale for the whole matrix, set by its largest |w|; "per channel" gives
every output row (every output feature of an `nn.Linear`) its own scale, so one row with an
outlier no longer coarsens the grid of all the others.

    q, scale = quantize_per_channel_int8(linear.weight)      # (out, in) int8, (out,) float
    approx = dequantize_int8(q, scale)

    fast = quantize_int8(model, per_channel=True)           # torch dynamic int8 of every nn.Linear
    quantize_onnx("fp32.onnx", "int8.onnx", per_channel=True)   # ONNX Runtime's dynamic int8

The ONNX export and its cache are `course_lib.onnx_export`; the other cheaper models are
`course_lib.model_surgery`; the measurements that compare them all `course_lib.fast_inference`.
"""
from __future__ import annotations

import copy
import logging
import types
import warnings
from pathlib import Path

import torch
from torch import nn

from .validation import require_finite_values

INT8_MAX = 127   # symmetric: -127..127; -128 is left unused so that q and -q both exist

# ---------------------------------------------------------------------------------------------
# int8 weights, written in the open
# ---------------------------------------------------------------------------------------------


def _require_weight(weight) -> torch.Tensor:
    # a NaN would pass through the scale and come back as int8 garbage, an inf makes every
    # other weight of its row round to 0
    return require_finite_values("weight", weight).detach()


def _scale_from(max_abs: torch.Tensor) -> torch.Tensor:
    """max|w| / 127; an all-zero row gets scale 1 (any scale represents zeros exactly)."""
    scale = max_abs.to(torch.float32) / INT8_MAX
    return torch.where(scale > 0, scale, torch.ones_like(scale))


def quantize_per_tensor_int8(weight) -> tuple[torch.Tensor, torch.Tensor]:
    """(q, scale): q int8 of weight's shape, scale a 0-d float32 tensor; weight ≈ scale * q."""
    weight = _require_weight(weight)
    scale = _scale_from(weight.abs().max())                              # ()
    q = torch.clamp(torch.round(weight.to(torch.float32) / scale), -INT8_MAX, INT8_MAX)
    return q.to(torch.int8), scale


def quantize_per_channel_int8(weight) -> tuple[torch.Tensor, torch.Tensor]:
    """(q, scale): q int8 (out, in), scale float32 (out,), one per output row; weight ≈ scale[:, None] * q."""
    weight = _require_weight(weight)
    scale = _scale_from(weight.abs().amax(dim=1))                        # (out,)
    q = torch.clamp(torch.round(weight.to(torch.float32) / scale[:, None]), -INT8_MAX, INT8_MAX)
    return q.to(torch.int8), scale


def dequantize_int8(q, scale) -> torch.Tensor:
    """scale * q as float32; scale is 0-d (per tensor) or (out,) (per output row)."""
    scale = scale.to(torch.float32)
    if scale.dim() == 0:
        return q.to(torch.float32) * scale
    return q.to(torch.float32) * scale.reshape(-1, *([1] * (q.dim() - 1)))


def quantization_error(weight, per_channel: bool) -> float:
    """Relative Frobenius error ||W - deq(quant(W))|| / ||W|| of symmetric int8."""
    weight = _require_weight(weight).to(torch.float32)
    quant = quantize_per_channel_int8 if per_channel else quantize_per_tensor_int8
    approx = dequantize_int8(*quant(weight))
    return (torch.linalg.norm(weight - approx) / torch.linalg.norm(weight)).item()


# ---------------------------------------------------------------------------------------------
# A whole model: PyTorch's dynamic int8 kernels
# ---------------------------------------------------------------------------------------------


def quantize_int8(model: nn.Module, per_channel: bool, reduce_range: bool = True) -> nn.Module:
    """A copy of `model` whose every nn.Linear runs PyTorch's dynamic int8 kernel: weights
    stored as int8 (per output row when `per_channel`, else one scale per matrix), activations
    quantised on the fly per batch. Embeddings and LayerNorms stay float32. CPU only.

    `reduce_range=True` is PyTorch's default: activations use 7 of their 8 bits (0..127), because
    the AVX2 kernel adds pairs of u8·s8 products in 16 bits, which can overflow at full range.
    With AVX512-VNNI (`vnni_supported()`) the products are summed in 32 bits, and
    `reduce_range=False` gives the activations their full 8 bits (half the rounding step)."""
    from torch.ao.quantization import (default_dynamic_qconfig, per_channel_dynamic_qconfig,
                                       quantize_dynamic)

    qconfig = per_channel_dynamic_qconfig if per_channel else default_dynamic_qconfig
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # torch.ao.quantization's deprecation notice
        quantized = quantize_dynamic(copy.deepcopy(model).cpu().eval(), {nn.Linear: qconfig},
                                     dtype=torch.qint8)
    if not reduce_range:
        from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

        for module in quantized.modules():
            if isinstance(module, DynamicLinear) and module._packed_params.dtype == torch.qint8:
                module.forward = types.MethodType(_linear_8bit_activations, module)
    return quantized


def _linear_8bit_activations(self, x):
    """torch's DynamicQuantizedLinear.forward with reduce_range=False (full 8-bit activations)."""
    y = torch.ops.quantized.linear_dynamic(x, self._packed_params._packed_params, reduce_range=False)
    return y.to(x.dtype)


# ---------------------------------------------------------------------------------------------
# An ONNX graph: ONNX Runtime's dynamic int8
# ---------------------------------------------------------------------------------------------


def quantize_onnx(src: str | Path, dst: str | Path, per_channel: bool = True) -> None:
    """ONNX Runtime's `quantize_dynamic` from `src` to `dst`: int8 weights (per output channel
    when `per_channel`), activations quantised on the fly (uint8, per tensor, full range).
    Every op type ONNX Runtime quantises dynamically: MatMul (-> DynamicQuantizeMatMul or
    MatMulInteger), the fused Attention (-> QAttention), Gather (the embedding tables, stored
    in int8), EmbedLayerNormalization.

    `DefaultTensorType: FLOAT`: ONNX's shape inference knows no type for the outputs of ONNX
    Runtime's fused operators (com.microsoft domain: Attention, SkipLayerNormalization, ...),
    and the quantiser stops at the first weight it cannot type (onnx_quantizer.py,
    `_get_default_tensor_type`) unless it is told that untyped tensors are float32, which in
    this float32 graph they are."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level, root.level = root.level, logging.ERROR     # "consider pre-processing" notices
    try:
        quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=per_channel,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    finally:
        root.setLevel(level)


def vnni_supported() -> bool:
    """Whether this CPU has AVX512-VNNI (or AVX-VNNI): int8 dot products summed in 32 bits, so
    full-range 8-bit activations cannot overflow (see `quantize_int8`)."""
    return _cpu_has("avx512_vnni", "avx_vnni")


def _cpu_has(*flags: str) -> bool:
    try:
        present = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return False
    return any(f in present for f in flags)
