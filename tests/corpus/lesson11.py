"""Exercise 11 (self-attention with a key/value cache; the per-position gap between one parallel pass and
generation): wrong answers and honest alternatives. Answer cells: 0 cached_self_attention, 1 the prediction,
2 stepwise_gap, 3 the written answer."""
from . import Honest, Mistake

_HEAD = ("import math\nimport torch\nimport torch.nn.functional as F\n\n"
         "def cached_self_attention(attn, x_new, cache=None):\n    B, n, _ = x_new.shape\n")
_SPLIT = "    def by_head(t):\n        return t.view(B, n, attn.n_heads, -1).transpose(1, 2)\n"
_QKV = ("    q, k, v = by_head(attn.q_proj(x_new)), by_head(attn.k_proj(x_new)), by_head(attn.v_proj(x_new))\n"
        "    if cache is not None:\n        k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)\n"
        "    t = k.shape[2] - n\n")
_MASK = "    future = torch.arange(t + n) > torch.arange(t, t + n)[:, None]\n"
_END = ("    out = (w @ v).transpose(1, 2).reshape(B, n, -1)\n    return attn.out_proj(out), (k, v)\n")


def _answer(split=_SPLIT, qkv=_QKV, scores="    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n",
            mask=_MASK, weights="    w = s.masked_fill(future, float('-inf')).softmax(-1)\n", end=_END):
    return _HEAD + split + qkv + scores + mask + weights + end



def _gap(alone="attn(seen, seen, seen, mask=sub)[0][:, t]", sub="None if mask is None else mask[:t + 1, :t + 1]",
         reduce="(parallel[:, t] - alone).abs().max()"):
    return {2: ("import torch\n\ndef stepwise_gap(attn, x, mask=None):\n    T = x.shape[1]\n"
                "    parallel = attn(x, x, x, mask=mask)[0]\n    gaps = []\n    for t in range(T):\n"
                f"        seen = x[:, :t + 1]\n        sub = {sub}\n        alone = {alone}\n"
                f"        gaps.append({reduce})\n    return torch.stack(gaps)\n")}


MISTAKES = [
    Mistake("11.kv-cache-step", "no-scale", {0: _answer(scores="    s = q @ k.transpose(-2, -1)\n")},
            "not divided by sqrt(head_dim)"),
    Mistake("11.kv-cache-step", "scale-by-d-model",
            {0: _answer(scores="    s = q @ k.transpose(-2, -1) / math.sqrt(attn.d_model)\n")}, "sqrt(d_model)"),
    Mistake("11.kv-cache-step", "cache-not-extended",
            {0: _answer(end="    out = (w @ v).transpose(1, 2).reshape(B, n, -1)\n"
                            "    return attn.out_proj(out), (k[:, :, t:], v[:, :, t:])\n")}, "cache k has shape"),
    Mistake("11.kv-cache-step", "softmax-without-max-subtraction",
            {0: _answer(weights="    e = s.exp().masked_fill(future, 0.0)\n    w = e / e.sum(-1, keepdim=True)\n")},
            "NaN"),
    Mistake("11.kv-cache-step", "cache-ignored",
            {0: _answer(qkv=_QKV.replace("    if cache is not None:\n        k, v = torch.cat([cache[0], k], 2), "
                                         "torch.cat([cache[1], v], 2)\n", ""))}, "new positions 1..1"),
    Mistake("11.kv-cache-chunk", "no-mask-inside-the-chunk",
            {0: _answer(weights="    w = s.softmax(-1)\n")}, "no causal mask"),
    Mistake("11.kv-cache-chunk", "is-causal-top-left",
            {0: _answer(scores="", mask="",
                        weights="    o = F.scaled_dot_product_attention(q, k, v, is_causal=n > 1)\n",
                        end="    return attn.out_proj(o.transpose(1, 2).reshape(B, n, -1)), (k, v)\n")},
            "top-left"),
    Mistake("11.kv-cache-chunk", "heads-split-without-transpose",
            {0: _answer(split="    def by_head(t):\n        return t.view(B, attn.n_heads, n, -1)\n",
                        end="    out = (w @ v).reshape(B, n, -1)\n    return attn.out_proj(out), (k, v)\n")},
            "differs"),
    Mistake("11.kv-cache-chunk", "prefill-tril-only",
            {0: _answer(mask="    future = torch.ones(n, t + n).triu(1).bool()\n")}, "top-left"),
    Mistake("11.stepwise-gap", "compares-the-prefix-pass-first-position",
            _gap(alone="attn(seen, seen, seen, mask=sub)[0][:, 0]"), "position 0 of the prefix pass"),
    Mistake("11.stepwise-gap", "mask-corner-from-the-end",
            _gap(sub="None if mask is None else mask[-(t + 1):, -(t + 1):]"), "first t + 1 rows"),
    Mistake("11.stepwise-gap", "mean-not-max", _gap(reduce="(parallel[:, t] - alone).abs().mean()"),
            "mean |difference|"),
    Mistake("11.stepwise-gap", "mask-rows-only", _gap(sub="None if mask is None else mask[:t + 1]"), "raised"),
    Mistake("11.stepwise-gap", "generation-sees-the-whole-sequence",
            _gap(alone="attn(x, x, x, mask=mask)[0][:, t]"), "expected"),
]

HONEST = [
    Honest("sdpa-with-offset-mask", {
        0: "import torch\nimport torch.nn.functional as F\n\n"
           "def cached_self_attention(attn, x_new, cache=None):\n    B, n, d = x_new.shape\n    h = attn.n_heads\n"
           "    q, k, v = (p(x_new).reshape(B, n, h, d // h).permute(0, 2, 1, 3) for p in (attn.q_proj, attn.k_proj, attn.v_proj))\n"
           "    if cache is not None:\n        k = torch.cat((cache[0], k), dim=-2)\n        v = torch.cat((cache[1], v), dim=-2)\n"
           "    t = k.shape[-2] - n\n    allowed = torch.ones(n, t + n, dtype=torch.bool).tril(diagonal=t)\n"
           "    o = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)\n"
           "    return attn.out_proj(o.permute(0, 2, 1, 3).reshape(B, n, d)), (k, v)\n"}),
    Honest("einsum-float64-loop-over-new-positions", {
        0: "import math\nimport torch\n\n"
           "def _split(x, h):\n    B, n, d = x.shape\n    return torch.einsum('bnhe->bhne', x.reshape(B, n, h, d // h))\n\n"
           "def cached_self_attention(attn, x_new, cache=None):\n    B, n, d = x_new.shape\n"
           "    q = _split(attn.q_proj(x_new), attn.n_heads)\n"
           "    k = _split(attn.k_proj(x_new), attn.n_heads)\n    v = _split(attn.v_proj(x_new), attn.n_heads)\n"
           "    if cache is not None:\n        k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)\n"
           "    t = k.shape[2] - n\n    outs = []\n"
           "    for i in range(n):\n"
           "        s = torch.einsum('bhe,bhke->bhk', q[:, :, i].double(), k[:, :, :t + i + 1].double()) / math.sqrt(q.shape[-1])\n"
           "        w = torch.softmax(s, dim=-1)\n"
           "        outs.append(torch.einsum('bhk,bhke->bhe', w, v[:, :, :t + i + 1].double()).to(x_new.dtype))\n"
           "    o = torch.stack(outs, dim=2)\n"
           "    return attn.out_proj(torch.einsum('bhne->bnhe', o).reshape(B, n, d)), (k, v)\n",
        2: "import torch\n\ndef stepwise_gap(attn, x, mask=None):\n"
           "    # one row of the result per position: the parallel pass vs the prefix that exists at time t\n"
           "    B, T, d = x.shape\n    allowed = torch.ones(T, T, dtype=torch.bool) if mask is None else mask\n"
           "    together = attn(x, x, x, mask=allowed[None, None])[0]\n"
           "    return [float((together[:, t] - attn(x[:, :t + 1], x[:, :t + 1], x[:, :t + 1],\n"
           "                   mask=allowed[None, None, :t + 1, :t + 1])[0][:, -1]).abs().amax()) for t in range(T)]\n"}),
    Honest("gaps-as-a-float64-tensor-with-amax", {
        1: "predicted_agreeing_positions = 'none'   # a wrong prediction is shown, not graded\n",
        2: "import torch\n\ndef stepwise_gap(attn, x, mask=None):\n    T = x.shape[1]\n"
           "    out = torch.zeros(T, dtype=torch.float64)\n    full = attn(x, x, x, mask)[0]\n"
           "    for t in range(T - 1, -1, -1):\n        m = mask if mask is None else mask[: t + 1, : t + 1]\n"
           "        y = attn(x[:, : t + 1], x[:, : t + 1], x[:, : t + 1], m)[0]\n"
           "        out[t] = torch.amax(torch.abs(full[:, t, :] - y[:, -1, :]))\n    return out\n"}),
]
