"""Exercise 05 (rotary position embeddings; what attention knows about order and position): wrong answers a
learner writes from the task text, and honest alternatives - other pairings and directions of RoPE are
valid conventions, not mistakes."""
from . import Honest, Mistake

_DEF = "import torch\n\ndef apply_rotary(x, positions=None, base=10000.0):\n"


def _rope(check="    if d % 2:\n        raise ValueError(f'odd d: {d}')\n",
          freq="base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)",
          angle="positions.to(torch.float64)[..., None] * theta",
          pairs="    a, b = x[..., 0::2], x[..., 1::2]\n",
          combine="    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)\n",
          default="torch.arange(T)"):
    """Adjacent pairs, counter-clockwise: the pieces a learner gets wrong are arguments."""
    return (_DEF + "    T, d = x.shape[-2], x.shape[-1]\n" + check +
            f"    if positions is None:\n        positions = {default}\n"
            f"    theta = {freq}\n"
            f"    phi = {angle}\n"
            "    cos, sin = phi.cos().to(x.dtype), phi.sin().to(x.dtype)\n" + pairs + combine)


# Hugging Face LLaMA / GPT-NeoX: pairs (i, i + d/2), cos and sin tables of width d
_HALF = (_DEF + "    T, d = x.shape[-2], x.shape[-1]\n    if d % 2:\n        raise ValueError('d must be even')\n"
         "    positions = torch.arange(T) if positions is None else positions\n"
         "    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))\n"
         "    freqs = positions.double()[..., None] * inv_freq\n"
         "    emb = torch.cat((freqs, freqs), dim=-1)\n"
         "    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)\n"
         "    def rotate_half(t):\n        t1, t2 = t[..., : d // 2], t[..., d // 2:]\n        return torch.cat((-t2, t1), dim=-1)\n"
         "    return x * cos + rotate_half(x) * sin\n")

# the same pairs (i, i + d/2), but the cos/sin tables repeat each frequency twice in a row (the
# interleaved layout): the two features of a pair turn by different angles
_MIXED = _HALF.replace("    emb = torch.cat((freqs, freqs), dim=-1)\n",
                       "    emb = freqs.repeat_interleave(2, dim=-1)\n")

_SWAPPED = _rope(combine="    return torch.stack((a * sin - b * cos, a * cos + b * sin), dim=-1).flatten(-2)\n")

_PROBE_HEAD = ("import math\nimport torch\n\n"
               "predicted_changes = {'none': {'order': False, 'shift': False},\n"
               "                     'absolute': {'order': True, 'shift': True},\n"
               "                     'rope': {'order': True, 'shift': False}}\n\n\n")


def _probe(add="h = tokens + table[positions] if scheme == 'absolute' else tokens",
           qkv="q, k, v = h @ w_q, h @ w_k, h @ w_v",
           scores="q @ k.transpose(-2, -1) / math.sqrt(d)",
           order="(layer(x[:, perm], slots) - out[:, perm])",
           reduce=".abs().max().item()"):
    return (_PROBE_HEAD + "def position_probe(scheme, x, w_q, w_k, w_v, table, perm, shift):\n"
            "    T, d = x.shape[1], x.shape[2]\n\n"
            "    def layer(tokens, positions):\n"
            f"        {add}\n"
            f"        {qkv}\n"
            "        if scheme == 'rope':\n"
            "            q, k = apply_rotary(q, positions), apply_rotary(k, positions)\n"
            f"        return torch.softmax({scores}, dim=-1) @ v\n\n"
            "    slots = torch.arange(T)\n"
            "    out = layer(x, slots)\n"
            f"    order_gap = {order}{reduce}\n"
            f"    shift_gap = (layer(x, slots + shift) - out){reduce}\n"
            "    return order_gap, shift_gap\n")


MISTAKES = [
    # 05.rope: not the lesson's frequencies, or not a rotation
    Mistake("05.rope", "frequency-i-over-d", {0: _rope(freq="base ** (-torch.arange(0, d // 2, dtype=torch.float64) / d)")},
            "base^(-i/d)"),
    Mistake("05.rope", "ignores-base", {0: _rope(freq="10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)")},
            "`base` argument"),
    Mistake("05.rope", "sin-and-cos-swapped", {0: _SWAPPED}, "position 0"),
    Mistake("05.rope", "half-pairs-with-interleaved-tables", {0: _MIXED}, "not a rotation"),
    Mistake("05.rope", "one-frequency-for-every-pair", {0: _rope(freq="torch.ones(d // 2, dtype=torch.float64)")},
            "same angle"),
    Mistake("05.rope", "positions-start-at-one", {0: _rope(default="torch.arange(1, T + 1)")}, "position 0"),
    # 05.rope-positions: explicit positions
    Mistake("05.rope-positions", "ignores-positions", {0: _rope(angle="torch.arange(T).to(torch.float64)[..., None] * theta")},
            "`positions` argument is ignored"),
    Mistake("05.rope-positions", "float32-angles", {0: _rope(angle="positions.float()[..., None] * theta.float()")},
            "angles p·ω computed in float32"),
    Mistake("05.rope-positions", "float32-frequencies", {0: _rope(freq="base ** (-torch.arange(0, d, 2) / d)")},
            "frequencies computed in float32"),
    Mistake("05.rope-positions", "first-sequence-positions-for-all", {0: _rope(
        angle="(positions.reshape(-1, T)[0] if positions.dim() > 1 else positions).to(torch.float64)[..., None] * theta")},
            "each has its own"),
    # 05.rope-conformance
    Mistake("05.rope-conformance", "no-odd-check-silently-truncates",
            {0: _rope(check="    x = x[..., : d - d % 2]\n    d = d - d % 2\n")}, "ValueError"),
    Mistake("05.rope-conformance", "assert-instead-of-valueerror",
            {0: _rope(check="    assert d % 2 == 0, 'odd d'\n")}, "AssertionError"),
    Mistake("05.rope-conformance", "odd-check-wrong-condition",
            {0: _rope(check="    if d % 2 and d > 1:\n        raise ValueError('odd d')\n")}, "x (2, 3, 1)"),
    Mistake("05.rope-conformance", "returns-float32", {0: _rope(
        pairs="    x = x.float()\n    cos, sin = cos.float(), sin.float()\n    a, b = x[..., 0::2], x[..., 1::2]\n")},
            "dtype"),
    # 05.position-probe
    Mistake("05.position-probe", "output-not-permuted-back", {2: _probe(order="(layer(x[:, perm], slots) - out)")},
            "compare with layer(x)[:, perm]"),
    Mistake("05.position-probe", "positions-moved-with-tokens", {2: _probe(order="(layer(x[:, perm], slots[perm]) - out[:, perm])")},
            "belong to the slots"),
    Mistake("05.position-probe", "mean-not-largest", {2: _probe(reduce=".abs().mean().item()")}, "asks for the largest"),
    Mistake("05.position-probe", "positions-on-queries-and-keys-only", {2: _probe(
        add="h = tokens + table[positions] if scheme == 'absolute' else tokens",
        qkv="q, k, v = h @ w_q, h @ w_k, tokens @ w_v")}, "values carry it"),
    Mistake("05.position-probe", "no-sqrt-d", {2: _probe(scores="q @ k.transpose(-2, -1)")}, "√d"),
]

HONEST = [
    Honest("rotate-half-hugging-face", {0: _HALF}),
    Honest("clockwise-adjacent-pairs", {0: _rope(combine="    return torch.stack((a * cos + b * sin, -a * sin + b * cos), dim=-1).flatten(-2)\n")}),
    Honest("complex-numbers", {0: _DEF + "    d = x.shape[-1]\n    if d % 2 == 1:\n        raise ValueError(f'x: even last dim needed, got {d}')\n"
                                         "    if positions is None:\n        positions = torch.arange(x.shape[-2])\n"
                                         "    theta = torch.tensor(base, dtype=torch.float64) ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)\n"
                                         "    rot = torch.polar(torch.ones(1, dtype=torch.float64), positions.double()[..., None] * theta)\n"
                                         "    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())\n"
                                         "    return torch.view_as_real(z * rot).flatten(-2).to(x.dtype)\n"}),
    Honest("rotation-matrices-loop", {0: "import math\nimport torch\n\ndef _rotation(phi):\n"
                                         "    c, s = math.cos(phi), math.sin(phi)\n    return torch.tensor([[c, -s], [s, c]], dtype=torch.float64)\n\n"
                                         "def apply_rotary(x, positions=None, base=10000.0):\n"
                                         "    *lead, T, d = x.shape\n    if d % 2:\n        raise ValueError('d must be even')\n"
                                         "    pos = torch.arange(T) if positions is None else positions\n"
                                         "    pos = pos.expand(*lead, T)\n"
                                         "    xd = x.double().reshape(-1, T, d)\n    pd = pos.reshape(-1, T)\n"
                                         "    out = torch.empty_like(xd)\n"
                                         "    for n in range(xd.shape[0]):\n        for t in range(T):\n            for i in range(d // 2):\n"
                                         "                R = _rotation(int(pd[n, t]) * base ** (-2 * i / d))\n"
                                         "                out[n, t, 2 * i:2 * i + 2] = R @ xd[n, t, 2 * i:2 * i + 2]\n"
                                         "    return out.reshape(x.shape).to(x.dtype)\n"}),
    Honest("probe-inverse-permutation-and-einsum", {2: (
        "import math\nimport torch\nimport torch.nn.functional as F\n\n"
        "predicted_changes = {'none': {'order': False, 'shift': False}, 'absolute': {'order': True, 'shift': True},\n"
        "                     'rope': {'order': True, 'shift': True}}   # a wrong guess costs nothing\n\n"
        "def _attend(x, w_q, w_k, w_v, scheme, table, pos):\n"
        "    h = x + table[pos] if scheme == 'absolute' else x\n"
        "    q = torch.einsum('btd,de->bte', h, w_q)\n    k = torch.einsum('btd,de->bte', h, w_k)\n"
        "    v = torch.einsum('btd,de->bte', h, w_v)\n"
        "    if scheme == 'rope':\n        q, k = apply_rotary(q, pos), apply_rotary(k, pos)\n"
        "    s = torch.einsum('bqd,bkd->bqk', q, k) / math.sqrt(q.shape[-1])\n"
        "    return torch.einsum('bqk,bkd->bqd', F.softmax(s, dim=-1), v)\n\n"
        "def position_probe(scheme, x, w_q, w_k, w_v, table, perm, shift):\n"
        "    T = x.shape[-2]\n    pos = torch.arange(T)\n"
        "    ref = _attend(x, w_q, w_k, w_v, scheme, table, pos)\n"
        "    undone = _attend(x[:, perm], w_q, w_k, w_v, scheme, table, pos)[:, torch.argsort(perm)]\n"
        "    moved = _attend(x, w_q, w_k, w_v, scheme, table, pos + shift)\n"
        "    return float((undone - ref).abs().max()), float((moved - ref).abs().max())\n")}),
]
