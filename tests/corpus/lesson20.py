"""Exercise 20 (prefix-LM mask and ELMo states over padded rows): wrong answers, honest alternatives."""
from . import Honest, Mistake

_M = "def prefix_lm_mask(attention_mask, prefix_length):\n"
_E = "def elmo_predictive_states(forward_states, backward_states, attention_mask):\n"
_HEAD = ("    real = attention_mask.bool()\n    B, T = real.shape\n"
         "    i = torch.arange(T)[:, None]\n    j = torch.arange(T)[None, :]\n")


def _mask(body):
    return {0: "import torch\n" + _M + _HEAD + body}


MISTAKES = [
    Mistake("20.prefix-lm-mask", "prefix-off-by-one", _mask(
        "    rank = real.long().cumsum(1) - 1\n"
        "    pre = real & (rank <= prefix_length[:, None])\n"
        "    return ((pre[:, None, :] | (j <= i)[None]) & real[:, None, :])[:, None]\n"), "prefix_length"),
    Mistake("20.prefix-lm-mask", "strictly-causal", _mask(
        "    rank = real.long().cumsum(1) - 1\n"
        "    pre = real & (rank < prefix_length[:, None])\n"
        "    return ((pre[:, None, :] | (j < i)[None]) & real[:, None, :])[:, None]\n"), "expected True, got False"),
    Mistake("20.prefix-lm-mask", "transposed", _mask(
        "    rank = real.long().cumsum(1) - 1\n"
        "    pre = real & (rank < prefix_length[:, None])\n"
        "    m = (pre[:, None, :] | (j <= i)[None]) & real[:, None, :]\n"
        "    return m.transpose(1, 2)[:, None]\n"), "query"),
    Mistake("20.prefix-lm-mask", "padding-keys-visible", _mask(
        "    pre = j[0][None, :] < prefix_length[:, None]\n"
        "    return (pre[:, None, :] | (j <= i)[None])[:, None]\n"), "(padding)"),
    Mistake("20.padding", "mask-from-lengths", _mask(
        "    lengths = attention_mask.long().sum(1)\n"
        "    real = j[0][None, :] < lengths[:, None]\n"
        "    pre = j[0][None, :] < torch.minimum(prefix_length, lengths)[:, None]\n"
        "    return ((pre[:, None, :] | (j <= i)[None]) & real[:, None, :])[:, None]\n"), "left padding"),
    Mistake("20.padding", "prefix-in-positions", _mask(
        "    pre = real & (j[0][None, :] < prefix_length[:, None])\n"
        "    return ((pre[:, None, :] | (j <= i)[None]) & real[:, None, :])[:, None]\n"), "prefix_length"),
    Mistake("20.padding", "contiguous-offset", _mask(
        "    start = real.long().argmax(1)\n"
        "    pre = real & (j[0][None, :] < (start + prefix_length)[:, None])\n"
        "    return ((pre[:, None, :] | (j <= i)[None]) & real[:, None, :])[:, None]\n"), "gaps"),
    Mistake("20.elmo-states", "ignores-padding", {1: "import torch\n" + _E +
            "    zero = torch.zeros_like(forward_states[:, :1])\n"
            "    left = torch.cat([zero, forward_states[:, :-1]], dim=1)\n"
            "    right = torch.cat([backward_states[:, 1:], zero], dim=1)\n"
            "    return torch.cat([left, right], dim=-1)\n"}, "padding"),
    Mistake("20.elmo-states", "states-at-i", {1: "import torch\n" + _E +
            "    return torch.cat([forward_states, backward_states], dim=-1) * attention_mask[..., None]\n"},
            "at i itself"),
    Mistake("20.elmo-states", "padding-not-zeroed", {1: "import torch\n" + _E +
            "    B, T, D = forward_states.shape\n    out = torch.zeros(B, T, 2 * D)\n"
            "    for b in range(B):\n"
            "        real = [j for j in range(T) if attention_mask[b, j]]\n"
            "        for i in range(T):\n"
            "            before = [j for j in real if j < i]\n"
            "            after = [j for j in real if j > i]\n"
            "            if before:\n                out[b, i, :D] = forward_states[b, before[-1]]\n"
            "            if after:\n                out[b, i, D:] = backward_states[b, after[0]]\n"
            "    return out\n"}, "must be zeros"),
    Mistake("20.elmo-states", "halves-swapped", {1: "import torch\n" + _E +
            "    B, T, D = forward_states.shape\n    out = torch.zeros(B, T, 2 * D)\n"
            "    for b in range(B):\n"
            "        real = [j for j in range(T) if attention_mask[b, j]]\n"
            "        for k, i in enumerate(real):\n"
            "            if k > 0:\n                out[b, i, D:] = backward_states[b, real[k - 1]]\n"
            "            if k + 1 < len(real):\n                out[b, i, :D] = forward_states[b, real[k + 1]]\n"
            "    return out\n"}, "forward half"),
]

HONEST = [
    Honest("loops", {
        0: "import torch\n" + _M + "    B, T = attention_mask.shape\n"
           "    out = torch.zeros(B, 1, T, T, dtype=torch.bool)\n"
           "    for b in range(B):\n"
           "        seen = 0\n"
           "        for j in range(T):\n"
           "            if not attention_mask[b, j]:\n                continue\n"
           "            prefix = seen < int(prefix_length[b])\n"
           "            seen += 1\n"
           "            for i in range(T):\n"
           "                out[b, 0, i, j] = prefix or j <= i\n"
           "    return out\n",
        1: "import torch\n" + _E + "    B, T, D = forward_states.shape\n"
           "    out = forward_states.new_zeros(B, T, 2 * D)\n"
           "    for b in range(B):\n"
           "        real = torch.nonzero(attention_mask[b]).flatten().tolist()\n"
           "        for k, i in enumerate(real):\n"
           "            if k:\n                out[b, i, :D] = forward_states[b, real[k - 1]]\n"
           "            if k < len(real) - 1:\n                out[b, i, D:] = backward_states[b, real[k + 1]]\n"
           "    return out\n"}),
    Honest("tril-and-sort", {
        0: "import torch\n" + _M + "    real = attention_mask.bool()\n    T = real.shape[1]\n"
           "    rank = torch.cumsum(real.int(), dim=-1)\n"
           "    prefix = real & (rank <= prefix_length.unsqueeze(-1))\n"
           "    lower = torch.ones(T, T, dtype=torch.bool).tril()\n"
           "    allowed = lower.unsqueeze(0) | prefix.unsqueeze(1)\n"
           "    return torch.einsum('bij,bj->bij', allowed.int(), real.int()).bool().unsqueeze(1)\n",
        1: "import torch\n" + _E + "    B, T, D = forward_states.shape\n"
           "    # compact each row's real tokens to the front (a stable sort), shift there, scatter back\n"
           "    order = torch.sort((~attention_mask.bool()).int(), dim=1, stable=True).indices\n"
           "    n = attention_mask.bool().sum(1)\n"
           "    f = forward_states.gather(1, order[..., None].expand(B, T, D))\n"
           "    b = backward_states.gather(1, order[..., None].expand(B, T, D))\n"
           "    pos = torch.arange(T)[None]\n"
           "    zero = f[:, :1] * 0\n"
           "    left = torch.cat([zero, f[:, :-1]], 1)\n"
           "    right = torch.cat([b[:, 1:], zero], 1) * (pos + 1 < n[:, None])[..., None]\n"
           "    packed = torch.cat([left, right], -1) * (pos < n[:, None])[..., None]\n"
           "    out = torch.zeros_like(packed)\n"
           "    return out.scatter(1, order[..., None].expand(B, T, 2 * D), packed)\n"}),
]
