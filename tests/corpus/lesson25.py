"""Exercise 25 (int8 sizes where int8 is applied, predicted then measured; per-channel asymmetric
uint8 checked by properties): wrong answers a learner writes from the task text, and honest
alternatives (other conventions and styles)."""
from . import Honest, Mistake

_S = "def int8_size_bytes(model, embeddings=False):\n"
_Q = "def quantize_asymmetric(weight):\n"


def _size(params="model.parameters()", int8_cost="p.numel() + 4 * p.shape[0]", other="4 * p.numel()",
          kinds="isinstance(m, nn.Linear) or (embeddings and isinstance(m, nn.Embedding))", extra=""):
    return {1: "import torch\nfrom torch import nn\n" + _S +
            f"    int8 = {{id(m.weight) for m in model.modules() if {kinds}}}\n"
            "    total = 0\n"
            f"    for p in {params}:\n"
            f"        total += ({int8_cost}) if id(p) in int8 else ({other})\n"
            f"    return total{extra}\n"}


def _quant(lo="w.amin(1).clamp(max=0)", hi="w.amax(1).clamp(min=0)", scale="(hi - lo) / 255",
           zp="(-torch.round(lo / scale)).clamp(0, 255)", q="(torch.round(w / scale[:, None]) + zp[:, None]).clamp(0, 255)",
           guard=True, out="q.to(torch.uint8), scale, zp.long()"):
    g = "    scale = torch.where(scale > 0, scale, torch.ones_like(scale))\n" if guard else ""
    return {2: "import torch\n" + _Q + "    w = weight.float()\n"
            f"    lo = {lo}\n    hi = {hi}\n    scale = {scale}\n" + g +
            f"    zp = {zp}\n    q = {q}\n    return {out}\n"}


MISTAKES = [
    # 25.int8-size: the measurement
    Mistake("25.int8-size", "every-parameter-one-byte", _size(other="p.numel()", int8_cost="p.numel()"), "1 byte"),
    Mistake("25.int8-size", "no-scales", _size(int8_cost="p.numel()"), "scales are missing"),
    Mistake("25.int8-size", "one-scale-per-matrix", _size(int8_cost="p.numel() + 4"), "one scale per matrix"),
    Mistake("25.int8-size", "scale-per-input-column", _size(int8_cost="p.numel() + 4 * p.shape[1]"), "input column"),
    Mistake("25.int8-size", "tied-table-counted-per-module", {1: "import torch\nfrom torch import nn\n" + _S +
            "    total = 0\n"
            "    for m in model.modules():\n"
            "        for name, p in m.named_parameters(recurse=False):\n"
            "            if name == 'weight' and (isinstance(m, nn.Linear) or (embeddings and isinstance(m, nn.Embedding))):\n"
            "                total += p.numel() + 4 * p.shape[0]\n"
            "            else:\n"
            "                total += 4 * p.numel()\n"
            "    return total\n"}, "more than once"),
    Mistake("25.int8-size", "every-name-counted", _size(params="(p for _, p in model.named_parameters(remove_duplicate=False))"),
            "more than once"),
    Mistake("25.int8-size", "biases-int8", {1: "import torch\nfrom torch import nn\n" + _S +
            "    total, seen = 0, set()\n"
            "    for m in model.modules():\n"
            "        for p in m.parameters(recurse=False):\n"
            "            if id(p) in seen:\n                continue\n"
            "            seen.add(id(p))\n"
            "            if isinstance(m, nn.Linear) or (embeddings and isinstance(m, nn.Embedding)):\n"
            "                total += p.numel() + (4 * p.shape[0] if p.dim() == 2 else 0)\n"
            "            else:\n                total += 4 * p.numel()\n"
            "    return total\n"}, "biases counted at 1 byte"),
    Mistake("25.int8-size", "embeddings-always", _size(kinds="isinstance(m, (nn.Linear, nn.Embedding))"),
            "stay float32 unless"),
    Mistake("25.int8-size", "buffers-counted", _size(extra=" + sum(4 * b.numel() for b in model.buffers())"),
            "buffers"),
    # 25.predict-size: the prediction
    Mistake("25.predict-size", "four-times", {0: "predicted_bert_base_shrink = 4.0\n"}, "only where int8 is applied"),
    Mistake("25.predict-size", "minilm-ratio", {0: "predicted_bert_base_shrink = 1.54\n"}, "MiniLM"),
    Mistake("25.predict-size", "inverted", {0: "predicted_bert_base_shrink = 0.41\n"}, "more than 1"),
    Mistake("25.predict-size", "with-embeddings", {0: "predicted_bert_base_shrink = 3.97\n"}, "embedding tables"),
    # 25.asymmetric: the properties
    Mistake("25.asymmetric", "range-without-zero", _quant(lo="w.amin(1)", hi="w.amax(1)"), "all of one sign"),
    Mistake("25.asymmetric", "zero-row-division", _quant(guard=False), "row of zeros"),
    Mistake("25.asymmetric", "floor-not-round", _quant(q="(torch.floor(w / scale[:, None]) + zp[:, None]).clamp(0, 255)"),
            "round to the nearest code"),
    Mistake("25.asymmetric", "zero-point-not-rounded", _quant(zp="(-lo / scale).clamp(0, 255)",
            q="(torch.round(w / scale[:, None] + zp[:, None])).clamp(0, 255)", out="q.to(torch.uint8), scale, zp"),
            "not a code"),
    Mistake("25.asymmetric", "symmetric-step", _quant(scale="torch.maximum(-lo, hi) / 127", zp="torch.full_like(lo, 128.0)"),
            "symmetric step"),
    Mistake("25.asymmetric", "signed-int8-codes", _quant(out="(q - 128).to(torch.int8), scale, zp.long()"),
            "wrapped around"),
    # 25.asymmetric-dtypes: conformance
    Mistake("25.asymmetric-dtypes", "codes-as-int64", _quant(out="q.long(), scale, zp.long()"), "torch.uint8"),
    Mistake("25.asymmetric-dtypes", "float-zero-point", _quant(out="q.to(torch.uint8), scale, zp"), "integer tensor"),
    Mistake("25.asymmetric-dtypes", "column-of-scales", _quant(out="q.to(torch.uint8), scale[:, None], zp.long()"),
            "scale should have shape"),
    # 25.predict-error-ratio: the prediction
    Mistake("25.predict-error-ratio", "same-codes", {3: "predicted_error_ratio = 1.0\n"}, "256 codes"),
    Mistake("25.predict-error-ratio", "squared", {3: "predicted_error_ratio = 4.0\n"}, "not with its square"),
    Mistake("25.predict-error-ratio", "inverted", {3: "predicted_error_ratio = 0.5\n"}, "above 1"),
]

HONEST = [
    Honest("row-loop-float64-and-named-modules", {
        0: "predicted_bert_base_shrink = 2.41   # 109.5M params, 23.8M of them in embeddings\n",
        1: "from torch import nn\n" + _S +
           "    quantised = set()\n"
           "    for name, module in model.named_modules():\n"
           "        if type(module) is nn.Linear or (embeddings and type(module) is nn.Embedding):\n"
           "            quantised.add(name + '.weight' if name else 'weight')\n"
           "    size = 0\n"
           "    for name, p in model.named_parameters():   # shared parameters are listed once\n"
           "        if name in quantised:\n"
           "            size += p.numel() * 1 + p.size(0) * 4\n"
           "        else:\n"
           "            size += p.numel() * 4\n"
           "    return size\n",
        2: "import torch\n" + _Q + "    rows, scales, zps = [], [], []\n"
           "    for row in weight.double():\n"
           "        lo, hi = min(row.min().item(), 0.0), max(row.max().item(), 0.0)\n"
           "        s = (hi - lo) / 255 or 1.0\n"
           "        z = int(min(max(round(-lo / s), 0), 255))\n"
           "        q = torch.clamp(torch.round(row / s) + z, 0, 255)\n"
           "        rows.append(q.to(torch.uint8)); scales.append(s); zps.append(z)\n"
           "    return torch.stack(rows), torch.tensor(scales), torch.tensor(zps)\n",
        3: "predicted_error_ratio = 255 / 127\n"}),
    Honest("half-up-rounding-and-data-ptr", {
        1: "import torch\n" + _S +
           "    seen, total = set(), 0\n"
           "    int8 = [torch.nn.Linear] + ([torch.nn.Embedding] if embeddings else [])\n"
           "    for m in model.modules():\n"
           "        for p in m.parameters(recurse=False):\n"
           "            if p.data_ptr() in seen:\n"
           "                continue\n"
           "            seen.add(p.data_ptr())\n"
           "            if isinstance(m, tuple(int8)) and p is m.weight:\n"
           "                total += p.numel() + 4 * p.shape[0]\n"
           "            else:\n"
           "                total += 4 * p.numel()\n"
           "    return int(total)\n",
        2: "import torch\n" + _Q +
           "    w = weight.to(torch.float64)\n"
           "    lo = torch.minimum(w.min(1).values, torch.zeros(()))\n"
           "    hi = torch.maximum(w.max(1).values, torch.zeros(()))\n"
           "    scale = torch.where(hi > lo, (hi - lo) / 255, torch.ones_like(hi))\n"
           "    zero_point = torch.floor(-lo / scale + 0.5).clamp(0, 255)          # round half up\n"
           "    q = torch.floor(w / scale[:, None] + 0.5) + zero_point[:, None]\n"
           "    return q.clamp(0, 255).to(torch.uint8), scale.float(), zero_point.to(torch.int32)\n",
        3: "predicted_error_ratio = 2\n"}),
]
