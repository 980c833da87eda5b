"""Exercise 02 (fused Q/K/V projections): wrong answers a learner writes, and honest alternatives."""
from . import Honest, Mistake

_FUSE = "import torch\nfrom torch import nn\n\ndef fuse_qkv(q_proj, k_proj, v_proj):\n"
_ATT = "import math\nimport torch\n\ndef fused_self_attention(x, weight, bias, mask=None):\n"


def _fuse(weight="torch.cat([p.weight for p in parts], dim=0)",
          bias="torch.cat([p.bias if p.bias is not None else torch.zeros(p.out_features) for p in parts])",
          parts="(q_proj, k_proj, v_proj)"):
    return (_FUSE + f"    parts = {parts}\n"
            "    fused = nn.Linear(q_proj.in_features, sum(p.out_features for p in parts))\n"
            "    with torch.no_grad():\n"
            f"        fused.weight.copy_({weight})\n"
            f"        fused.bias.copy_({bias})\n"
            "    return fused\n")


def _att(project="x @ weight + bias", split="projected.split(d_head, dim=-1)", scale="math.sqrt(d_head)",
         fill="torch.finfo(scores.dtype).min", zero=True, order="q, k, v"):
    return (_ATT + "    d_head = weight.shape[1] // 3\n"
            f"    projected = {project}\n"
            f"    {order} = {split}\n"
            f"    scores = q @ k.transpose(-2, -1) / {scale}\n"
            "    if mask is not None:\n"
            f"        scores = scores.masked_fill(~mask, {fill})\n"
            "    w = scores.softmax(-1)\n"
            + ("    if mask is not None:\n        w = w.masked_fill(~mask, 0.0)\n" if zero else "")
            + "    return w @ v, w\n")


MISTAKES = [
    Mistake("02.fuse-qkv", "order-k-q-v", {0: _fuse(parts="(k_proj, q_proj, v_proj)")}, "q, k, v"),
    Mistake("02.fuse-qkv", "crashes-without-bias", {0: _fuse(bias="torch.cat([p.bias for p in parts])")}, "raised"),
    Mistake("02.fuse-qkv", "drops-the-biases", {0: _fuse(bias="torch.zeros(fused.out_features)")}, "differs"),
    Mistake("02.fuse-qkv", "stacks-along-inputs",
            {0: _FUSE + "    parts = (q_proj, k_proj, v_proj)\n"
                "    fused = nn.Linear(3 * q_proj.in_features, q_proj.out_features)\n"
                "    with torch.no_grad():\n        fused.weight.copy_(torch.cat([p.weight for p in parts], dim=1))\n"
                "    return fused\n"}, "different widths"),
    Mistake("02.fused-forward", "scale-by-d-model", {1: _att(scale="math.sqrt(x.shape[-1])")}, "√d_head"),
    Mistake("02.fused-forward", "linear-layout", {1: _att(project="x @ weight.T + bias")}, "weight (12, 9)"),
    Mistake("02.fused-forward", "interleaved-split",
            {1: _att(split="projected.unflatten(-1, (d_head, 3)).unbind(-1)")}, "differs"),
    Mistake("02.fused-forward", "order-v-k-q", {1: _att(order="v, k, q")}, "q, k, v in that order"),
    Mistake("02.fused-masked", "inverted-mask", {1: _att(fill="torch.finfo(scores.dtype).min").replace("~mask", "mask")},
            "may attend"),
    Mistake("02.fused-masked", "minus-inf-fill-nan", {1: _att(fill="float('-inf')", zero=False)}, "NaN"),
    Mistake("02.fused-masked", "fully-masked-row-not-zeroed", {1: _att(zero=False)}, "every key masked"),
]

HONEST = [
    Honest("einsum-and-linear", {
        0: _FUSE + "    ws, bs = [], []\n    for p in (q_proj, k_proj, v_proj):\n        ws.append(p.weight.detach())\n"
               "        bs.append(p.bias.detach() if p.bias is not None else p.weight.new_zeros(p.out_features))\n"
               "    fused = nn.Linear(ws[0].shape[1], sum(w.shape[0] for w in ws))\n"
               "    fused.weight = nn.Parameter(torch.cat(ws).clone())\n    fused.bias = nn.Parameter(torch.cat(bs).clone())\n"
               "    return fused\n",
        1: "import math\nimport torch\nimport torch.nn.functional as F\n\n"
           "def fused_self_attention(x, weight, bias, mask=None):\n"
           "    d = weight.shape[1] // 3\n    p = F.linear(x, weight.T, bias)\n"
           "    q, k, v = p[..., :d], p[..., d:2 * d], p[..., 2 * d:]\n"
           "    s = torch.einsum('btd,bsd->bts', q, k) / math.sqrt(d)\n"
           "    if mask is not None:\n        s = s.masked_fill(~mask, float('-inf'))\n"
           "    w = torch.nan_to_num(s.softmax(-1), nan=0.0)\n    return torch.einsum('bts,bsd->btd', w, v), w\n"}),
    Honest("float64-loop-helper", {
        1: "import math\nimport torch\n\ndef _softmax_rows(s):\n    m = s.amax(-1, keepdim=True).clamp_min(-1e300)\n"
           "    e = (s - m).exp()\n    return e / e.sum(-1, keepdim=True).clamp_min(1e-300)\n\n"
           "def fused_self_attention(x, weight, bias, mask=None):\n"
           "    d = weight.shape[1] // 3\n    p = x.double() @ weight.double() + bias.double()\n"
           "    q, k, v = p.chunk(3, dim=-1)\n    s = q @ k.transpose(-1, -2) / math.sqrt(d)\n"
           "    if mask is not None:\n        s = s.masked_fill(~mask, float('-inf'))\n"
           "    w = _softmax_rows(s)\n    return (w @ v).to(x.dtype), w.to(x.dtype)\n"}),
]
