"""Exercise 25 (asymmetric uint8 quantisation): wrong answers a learner writes, honest alternatives."""
from . import Honest, Mistake

_Q = "def quantize_asymmetric(weight):\n"
_D = "def dequantize_asymmetric(q, scale, zero_point):\n"
_E = "def quantization_errors(weight):\n"


def _quant(lo="w.amin(1).clamp(max=0)", hi="w.amax(1).clamp(min=0)", zp="(-torch.round(lo / scale)).clamp(0, 255)",
           q="(torch.round(w / scale[:, None]) + zp[:, None]).clamp(0, 255)", guard=True):
    g = "    scale = torch.where(scale > 0, scale, torch.ones_like(scale))\n" if guard else ""
    return {0: "import torch\n" + _Q + "    w = weight.float()\n"
            f"    lo = {lo}\n    hi = {hi}\n    scale = (hi - lo) / 255\n" + g +
            f"    zp = {zp}\n    q = {q}\n"
            "    return q.to(torch.uint8), scale, zp.long()\n"}


_SYM = ("    w = weight.float()\n    step = w.abs().amax(1, keepdim=True) / 127\n"
        "    step = torch.where(step > 0, step, torch.ones_like(step))\n"
        "    sym = torch.round(w / step).clamp(-127, 127) * step\n"
        "    asym = dequantize_asymmetric(*quantize_asymmetric(w))\n")

MISTAKES = [
    Mistake("25.asymmetric", "range-without-zero", _quant(lo="w.amin(1)", hi="w.amax(1)"), "must include 0"),
    Mistake("25.asymmetric", "zero-row-division", _quant(guard=False), "row of zeros"),
    Mistake("25.asymmetric", "zero-point-sign", _quant(zp="torch.round(lo / scale).clamp(0, 255)"), "zero_point"),
    Mistake("25.asymmetric", "signed-int8-codes", {0: _quant()[0].replace("q.to(torch.uint8)", "(q - 128).to(torch.int8)")},
            "uint8"),
    Mistake("25.asymmetric", "floor-not-round", _quant(q="(torch.floor(w / scale[:, None]) + zp[:, None]).clamp(0, 255)"),
            "expected"),
    Mistake("25.dequantize", "uint8-wraparound", {1: "import torch\n" + _D +
            "    return (q - zero_point.to(torch.uint8)[:, None]).float() * scale[:, None]\n"}, "wrapped around"),
    Mistake("25.dequantize", "zero-point-added", {1: "import torch\n" + _D +
            "    return (q.float() + zero_point.float()[:, None]) * scale[:, None]\n"}, "differs"),
    Mistake("25.dequantize", "scale-per-column", {1: "import torch\n" + _D +
            "    return (q.float() - zero_point.float()[:, None]) * scale.mean()\n"}, "differs"),
    Mistake("25.errors", "swapped-order", {2: "import torch\n" + _E + _SYM +
            "    n = torch.linalg.norm(w)\n"
            "    return float(torch.linalg.norm(w - asym) / n), float(torch.linalg.norm(w - sym) / n)\n"}, "order"),
    Mistake("25.errors", "absolute-error", {2: "import torch\n" + _E + _SYM +
            "    return float(torch.linalg.norm(w - sym)), float(torch.linalg.norm(w - asym))\n"}, "relative"),
    Mistake("25.errors", "symmetric-per-tensor", {2: "import torch\n" + _E +
            "    w = weight.float()\n    step = w.abs().max() / 127\n"
            "    sym = torch.round(w / step).clamp(-127, 127) * step\n"
            "    asym = dequantize_asymmetric(*quantize_asymmetric(w))\n"
            "    n = torch.linalg.norm(w)\n"
            "    return float(torch.linalg.norm(w - sym) / n), float(torch.linalg.norm(w - asym) / n)\n"}, "symmetric"),
]

HONEST = [
    Honest("row-loop-float64", {
        0: "import torch\n" + _Q + "    rows, scales, zps = [], [], []\n"
           "    for row in weight.double():\n"
           "        lo, hi = min(row.min().item(), 0.0), max(row.max().item(), 0.0)\n"
           "        s = torch.tensor((hi - lo) / 255, dtype=torch.float32)\n"
           "        if s == 0:\n            s = torch.tensor(1.0)\n"
           "        z = int(min(max(-torch.round(torch.tensor(lo, dtype=torch.float32) / s).item(), 0), 255))\n"
           "        q = torch.clamp(torch.round(row.float() / s) + z, 0, 255)\n"
           "        rows.append(q.to(torch.uint8)); scales.append(s); zps.append(z)\n"
           "    return torch.stack(rows), torch.stack(scales), torch.tensor(zps)\n",
        1: "import torch\n" + _D + "    return torch.einsum('ij,i->ij', q.double() - zero_point.double()[:, None], scale.double()).float()\n"}),
    Honest("helper-and-fake-quant", {
        2: "import torch\n\ndef _relative(w, approx):\n    return (torch.linalg.norm(w - approx) / torch.linalg.norm(w)).item()\n\n"
           + _E + "    w = weight.float()\n"
           "    m = w.abs().amax(dim=1)\n    m[m == 0] = 127\n"
           "    step = (m / 127)[:, None]\n"
           "    sym = (w / step).round().clamp(-127, 127) * step\n"
           "    q, s, z = quantize_asymmetric(w)\n"
           "    asym = (q.long() - z[:, None]).float() * s[:, None]\n"
           "    return _relative(w, sym), _relative(w, asym)\n"}),
]
