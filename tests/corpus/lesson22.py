"""Exercise 22 (how far back the memory reaches, relative scores by ascending distance, memories of a stack):
wrong answers, honest ones. Answer cells: 0 the prediction, 1 earliest_dependency, 2 relative_scores,
3 update_memories, 4 the written answer."""
from . import Honest, Mistake

_R = "def relative_scores(x, memory_length):\n"
_U = "def update_memories(memories, layer_inputs, mem_len):\n"


def _scores(distance="memory_length + i - j", column="min(d, R - 1)", future="0.0"):
    return {2: "import torch\n" + _R + "    *lead, Q, R = x.shape\n    K = memory_length + Q\n"
            f"    y = torch.full((*lead, Q, K), {future}, dtype=x.dtype)\n"
            "    for i in range(Q):\n        for j in range(K):\n"
            f"            d = {distance}\n"
            "            if d >= 0:\n"
            f"                y[..., i, j] = x[..., i, {column}]\n"
            "    return y\n"}


_E = "def earliest_dependency(model, stream, segment_length, position):\n"


def _reach(run="logits, memory = model(rows[:, s * T:(s + 1) * T], memory)", search="range(position + 1)",
           moved="(at[1:] - at[:1]).abs().amax(dim=-1) > 1e-5", answer="first"):
    """A batched measurement; the arguments make one mistake each."""
    return {1: "import torch\n" + _E +
            "    V, T = model.config.vocab_size, segment_length\n"
            "    last = position // T\n"
            "    rows = stream[:, :(last + 1) * T].repeat(position + 2, 1)\n"
            "    for p in range(position + 1):\n        rows[p + 1, p] = (rows[p + 1, p] + 1) % V\n"
            "    memory = None\n"
            "    with torch.no_grad():\n"
            "        for s in range(last + 1):\n"
            f"            {run}\n"
            "    at = logits[:, position - last * T]\n"
            f"    moved = {moved}\n"
            f"    first = next(p for p in {search} if moved[p])\n"
            f"    return {answer}\n"}


def _memories(body):
    return {3: "import torch\n" + _U + body}


MISTAKES = [
    Mistake("22.reach", "memory-not-carried", _reach(run="logits, _ = model(rows[:, s * T:(s + 1) * T])"),
            "carry the memory"),
    Mistake("22.reach", "whole-stream-one-segment", {1: "import torch\n" + _E +
            "    rows = stream[:, :position + 1].repeat(position + 2, 1)\n"
            "    for p in range(position + 1):\n"
            "        rows[p + 1, p] = (rows[p + 1, p] + 1) % model.config.vocab_size\n"
            "    with torch.no_grad():\n"
            "        logits, _ = model(rows)                     # the stream up to the position, at once\n"
            "    at = logits[:, position]\n"
            "    moved = (at[1:] - at[:1]).abs().amax(dim=-1) > 1e-5\n"
            "    return int(moved.nonzero()[0])\n"}, "one segment"),
    Mistake("22.reach", "one-segment-back", _reach(search="range(max(0, (position // segment_length - 1) * "
                                                           "segment_length), position + 1)"), "one memory"),
    Mistake("22.reach", "returns-the-distance", _reach(answer="position - first"), "distance"),
    Mistake("22.reach", "tolerance-too-large", _reach(moved="(at[1:] - at[:1]).abs().amax(dim=-1) > 0.05"), "too late"),
    Mistake("22.reach-prediction", "n-layers-times-mem-len-from-the-position", {0: "predicted_earliest = 19 - 3 * 4\n"},
            "before the position"),
    Mistake("22.reach-prediction", "one-memory-only", {0: "predicted_earliest = 12\n"}, "one memory back"),
    Mistake("22.reach-prediction", "a-distance", {0: "predicted_earliest = 15\n"}, "distance"),
    Mistake("22.memory-update", "no-detach", _memories(
        "    out = []\n    for l, h in enumerate(layer_inputs):\n"
        "        both = h if memories is None else torch.cat([memories[l], h], 1)\n"
        "        out.append(both[:, max(0, both.shape[1] - mem_len):])\n    return out\n"), "detach"),
    Mistake("22.relative-scores", "descending-layout", _scores(column="R - 1 - min(d, R - 1)"), "descending"),
    Mistake("22.relative-scores", "forgets-memory-offset", _scores(distance="i - j"), "M + i - j"),
    Mistake("22.relative-scores", "future-not-zero", {2: "import torch\n" + _R +
            "    *lead, Q, R = x.shape\n    K = memory_length + Q\n"
            "    d = memory_length + torch.arange(Q)[:, None] - torch.arange(K)[None, :]\n"
            "    return torch.gather(x, -1, d.clamp(0, R - 1).expand(*lead, Q, K))\n"}, "is not 0"),
    Mistake("22.relative-scores", "no-clamp-wraps", _scores(column="d % R"), "clamped"),
    Mistake("22.memory-update", "minus-zero-slice", _memories(
        "    out = []\n    for l, h in enumerate(layer_inputs):\n"
        "        both = h if memories is None else torch.cat([memories[l], h], 1)\n"
        "        out.append(both[:, -mem_len:].detach())\n    return out\n"), "-0"),
    Mistake("22.memory-update", "keeps-the-first", _memories(
        "    out = []\n    for l, h in enumerate(layer_inputs):\n"
        "        both = h if memories is None else torch.cat([memories[l], h], 1)\n"
        "        out.append(both[:, :mem_len].detach())\n    return out\n"), "first mem_len"),
    Mistake("22.memory-update", "wrong-order", _memories(
        "    out = []\n    for l, h in enumerate(layer_inputs):\n"
        "        both = h if memories is None else torch.cat([h, memories[l]], 1)\n"
        "        out.append(both[:, max(0, both.shape[1] - mem_len):].detach())\n    return out\n"), "differs"),
    Mistake("22.memory-update", "one-memory-for-all-layers", _memories(
        "    h = layer_inputs[-1]\n"
        "    both = h if memories is None else torch.cat([memories[-1], h], 1)\n"
        "    m = both[:, max(0, both.shape[1] - mem_len):].detach()\n"
        "    return [m for _ in layer_inputs]\n"), "layer 0"),
]

HONEST = [
    Honest("index-arithmetic-and-narrow", {
        0: "predicted_earliest = 4.0   # 19 -> 12 -> 8 -> 4\n",
        1: "import torch\n" + _E + "    # one token changed at a time, each stream run on its own\n"
           "    def logits_at(ids):\n"
           "        memory, out = None, []\n"
           "        with torch.no_grad():\n"
           "            for s in range(0, ids.shape[1], segment_length):\n"
           "                logits, memory = model(ids[:, s:s + segment_length], memory)\n"
           "                out.append(logits)\n"
           "        return torch.cat(out, dim=1)[0, position]\n"
           "    base = logits_at(stream)\n"
           "    for p in range(position + 1):\n"
           "        changed = stream.clone()\n"
           "        changed[0, p] = (changed[0, p] + 7) % model.config.vocab_size\n"
           "        if not torch.allclose(logits_at(changed), base, atol=1e-5, rtol=0):\n"
           "            return p\n",
        2: "import torch\n" + _R + "    Q, R = x.shape[-2:]\n    K = memory_length + Q\n"
           "    i = torch.arange(Q).view(Q, 1)\n    j = torch.arange(K).view(1, K)\n"
           "    d = memory_length + i - j\n"
           "    flat = x.reshape(-1, Q, R)\n"
           "    rows = torch.arange(Q).view(Q, 1).expand(Q, K)\n"
           "    y = flat[:, rows, torch.clamp(d, 0, R - 1)]\n"
           "    y = torch.where(d >= 0, y, torch.zeros((), dtype=x.dtype))\n"
           "    return y.reshape(*x.shape[:-2], Q, K)\n",
        3: "import torch\n" + _U + "    if memories is None:\n"
           "        memories = [h[:, :0] for h in layer_inputs]\n"
           "    out = []\n"
           "    with torch.no_grad():\n"
           "        for m, h in zip(memories, layer_inputs):\n"
           "            both = torch.cat([m, h], dim=1)\n"
           "            n = both.shape[1]\n"
           "            out.append(both.narrow(1, n - min(n, mem_len), min(n, mem_len)).clone())\n"
           "    return out\n"}),
    Honest("flip-then-pad-trick", {
        1: _E + "    # derived from the architecture rather than measured: each layer reads its memory, mem_len\n"
           "    # before the start of the segment it reads in\n"
           "    t = position\n"
           "    for _ in range(model.config.n_layers):\n"
           "        t = max(0, t // segment_length * segment_length - model.config.mem_len)\n"
           "    return t\n",
        2: "import torch\nimport torch.nn.functional as F\n" + _R +
           "    # build the lesson's descending table over all K distances, then shift it the lesson's way\n"
           "    *lead, Q, R = x.shape\n    K = memory_length + Q\n"
           "    cols = torch.arange(K - 1, -1, -1).clamp(max=R - 1)\n"
           "    table = x[..., cols]\n"
           "    padded = F.pad(table, (1, 0)).reshape(*lead, K + 1, Q)\n"
           "    y = padded[..., 1:, :].reshape(*lead, Q, K)\n"
           "    future = torch.ones(Q, K, dtype=torch.bool).triu(memory_length + 1)\n"
           "    return y.masked_fill(future, 0)\n",
        3: "import torch\n" + _U + "    result = []\n"
           "    for l in range(len(layer_inputs)):\n"
           "        h = layer_inputs[l].detach()\n"
           "        if memories is not None:\n            h = torch.cat([memories[l].detach(), h], dim=1)\n"
           "        start = h.shape[1] - mem_len if mem_len < h.shape[1] else 0\n"
           "        result.append(h[:, start:])\n"
           "    return result\n"}),
]
