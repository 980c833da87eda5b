"""Exercise 05 (rotary position embeddings): wrong answers a learner writes, and honest alternatives."""
from . import Honest, Mistake

_DEF = "import torch\n\ndef apply_rotary(x, positions=None, base=10000.0):\n"


def _rope(check="    if d % 2:\n        raise ValueError('odd d')\n", freq="base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)",
          dtype="torch.float64", pos="positions", combine="(a * cos - b * sin, a * sin + b * cos)"):
    return (_DEF + "    T, d = x.shape[-2], x.shape[-1]\n" + check +
            "    if positions is None:\n        positions = torch.arange(T)\n"
            f"    theta = {freq}\n"
            f"    phi = ({pos}).to({dtype})[..., None] * theta.to({dtype})\n"
            "    cos, sin = phi.cos().to(x.dtype), phi.sin().to(x.dtype)\n"
            "    a, b = x[..., 0::2], x[..., 1::2]\n"
            f"    return torch.stack({combine}, dim=-1).flatten(-2)\n")


_HALF = (_DEF + "    T, d = x.shape[-2], x.shape[-1]\n    if d % 2:\n        raise ValueError('odd')\n"
         "    positions = torch.arange(T) if positions is None else positions\n"
         "    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)\n"
         "    phi = positions.double()[..., None] * theta\n"
         "    cos, sin = phi.cos().to(x.dtype), phi.sin().to(x.dtype)\n"
         "    a, b = x[..., : d // 2], x[..., d // 2:]\n"
         "    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)\n")

MISTAKES = [
    Mistake("05.rope", "rotate-half-convention", {0: _HALF}, "adjacent"),
    Mistake("05.rope", "clockwise", {0: _rope(combine="(a * cos + b * sin, -a * sin + b * cos)")}, "counter-clockwise"),
    Mistake("05.rope", "frequency-i-over-d", {0: _rope(freq="base ** (-torch.arange(0, d // 2, dtype=torch.float64) / d)")},
            "differs from the reference"),
    Mistake("05.rope", "ignores-base", {0: _rope(freq="10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)")},
            "base=500.0"),
    Mistake("05.rope-positions", "ignores-positions", {0: _rope(pos="torch.arange(T)")}, "positions 10..13"),
    Mistake("05.rope-positions", "float32-angles", {0: _rope(dtype="torch.float32")}, "float64"),
    Mistake("05.rope-positions", "returns-float32", {0: _rope().replace("return torch.stack", "return torch.stack").replace(
        "    a, b = x[..., 0::2], x[..., 1::2]\n", "    x = x.float()\n    cos, sin = cos.float(), sin.float()\n    a, b = x[..., 0::2], x[..., 1::2]\n")},
            "float64"),
    Mistake("05.rope-odd", "no-odd-check-silently-truncates", {0: _rope(check="    x = x[..., : d - d % 2]\n    d = d - d % 2\n")},
            "ValueError"),
    Mistake("05.rope-odd", "assert-instead-of-valueerror", {0: _rope(check="    assert d % 2 == 0, 'odd d'\n")}, "AssertionError"),
    Mistake("05.rope-odd", "odd-check-wrong-condition", {0: _rope(check="    if d % 2 and d > 1:\n        raise ValueError('odd d')\n")},
            "x (2, 3, 1)"),
]

HONEST = [
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
                                         "    pos = pos.expand(*lead, T) if pos.dim() < len(lead) + 1 else pos\n"
                                         "    xd = x.double().reshape(-1, T, d)\n    pd = pos.reshape(-1, T)\n"
                                         "    pd = pd.expand(xd.shape[0], T) if pd.shape[0] == 1 else pd\n"
                                         "    out = torch.empty_like(xd)\n"
                                         "    for n in range(xd.shape[0]):\n        for t in range(T):\n            for i in range(d // 2):\n"
                                         "                R = _rotation(int(pd[n, t]) * base ** (-2 * i / d))\n"
                                         "                out[n, t, 2 * i:2 * i + 2] = R @ xd[n, t, 2 * i:2 * i + 2]\n"
                                         "    return out.reshape(x.shape).to(x.dtype)\n"}),
]
