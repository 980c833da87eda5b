"""Exercise 20 (what each model reads; prefix-LM mask and ELMo states over padded rows): wrong answers, honest
alternatives. Answer cells: 0 the prediction, 1 dependency_matrix, 2 prefix_lm_mask, 3 elmo_predictive_states,
4 the written answer."""
from . import Honest, Mistake

_M = "def prefix_lm_mask(attention_mask, prefix_length):\n"
_E = "def elmo_predictive_states(forward_states, backward_states, attention_mask):\n"
_HEAD = ("    real = attention_mask.bool()\n    B, T = real.shape\n"
         "    i = torch.arange(T)[:, None]\n    j = torch.arange(T)[None, :]\n")


def _mask(body):
    return {2: "import torch\n" + _M + _HEAD + body}


_D = "def dependency_matrix(model, input_ids, vocab_size):\n"


def _dep(replace="(input_ids + 1) % vocab_size", moved="(logits[1:] - logits[:1]).abs().amax(dim=-1) > 1e-9",
         out="moved.T"):
    return {1: "import torch\n" + _D +
            "    T = input_ids.shape[0]\n"
            "    rows = input_ids.repeat(T + 1, 1)\n"
            f"    rows[torch.arange(1, T + 1), torch.arange(T)] = {replace}\n"
            "    with torch.no_grad():\n        logits = model(rows)\n"
            f"    moved = {moved}\n"
            f"    return {out}\n"}


def _links(**changes):
    links = {"GPT": 36, "ELMo": 56, "BERT": 64, "prefix LM": 39} | changes
    return {0: f"predicted_links = {links!r}\n"}


MISTAKES = [
    Mistake("20.dependencies", "transposed", _dep(out="moved"), "transposed"),
    Mistake("20.dependencies", "fixed-replacement-id", _dep(replace="0"), "fixed id"),
    Mistake("20.dependencies", "top-token-only", _dep(moved="logits[1:].argmax(-1) != logits[:1].argmax(-1)"),
            "compare every logit"),
    Mistake("20.dependencies", "no-self-dependency", _dep(out="moved.T & ~torch.eye(T, dtype=torch.bool)"),
            "says it does not"),
    Mistake("20.links-prediction", "gpt-without-itself", _links(GPT=28), "has read token i itself"),
    Mistake("20.links-prediction", "elmo-sees-everything", _links(ELMo=64), "neither has read token i"),
    Mistake("20.links-prediction", "prefix-lm-as-gpt", _links(**{"prefix LM": 36}), "both directions"),
    Mistake("20.prefix-lm-mask", "prefix-off-by-one", _mask(
        "    rank = real.long().cumsum(1) - 1\n"
        "    pre = real & (rank <= prefix_length[:, None])\n"
        "    return ((pre[:, None, :] | (j <= i)[None]) & real[:, None, :])[:, None]\n"), "one real token too many"),
    Mistake("20.prefix-lm-mask", "strictly-causal", _mask(
        "    rank = real.long().cumsum(1) - 1\n"
        "    pre = real & (rank < prefix_length[:, None])\n"
        "    return ((pre[:, None, :] | (j < i)[None]) & real[:, None, :])[:, None]\n"), "does not see its own key"),
    Mistake("20.prefix-lm-mask", "transposed", _mask(
        "    rank = real.long().cumsum(1) - 1\n"
        "    pre = real & (rank < prefix_length[:, None])\n"
        "    m = (pre[:, None, :] | (j <= i)[None]) & real[:, None, :]\n"
        "    return m.transpose(1, 2)[:, None]\n"), "query"),
    Mistake("20.prefix-lm-mask", "padding-keys-visible", _mask(
        "    pre = j[0][None, :] < prefix_length[:, None]\n"
        "    return (pre[:, None, :] | (j <= i)[None])[:, None]\n"), "padding key is visible"),
    Mistake("20.padding", "mask-from-lengths", _mask(
        "    lengths = attention_mask.long().sum(1)\n"
        "    real = j[0][None, :] < lengths[:, None]\n"
        "    pre = j[0][None, :] < torch.minimum(prefix_length, lengths)[:, None]\n"
        "    return ((pre[:, None, :] | (j <= i)[None]) & real[:, None, :])[:, None]\n"), "right padding assumed"),
    Mistake("20.padding", "prefix-in-positions", _mask(
        "    pre = real & (j[0][None, :] < prefix_length[:, None])\n"
        "    return ((pre[:, None, :] | (j <= i)[None]) & real[:, None, :])[:, None]\n"), "counted in positions"),
    Mistake("20.padding", "contiguous-offset", _mask(
        "    start = real.long().argmax(1)\n"
        "    pre = real & (j[0][None, :] < (start + prefix_length)[:, None])\n"
        "    return ((pre[:, None, :] | (j <= i)[None]) & real[:, None, :])[:, None]\n"), "from the first real token"),
    Mistake("20.elmo-states", "ignores-padding", {3: "import torch\n" + _E +
            "    pad = torch.nn.functional.pad\n"
            "    previous = pad(forward_states, (0, 0, 1, 0))[:, :-1]      # shifted by position only\n"
            "    following = pad(backward_states, (0, 0, 0, 1))[:, 1:]\n"
            "    return torch.cat((previous, following), -1)\n"}, "by position"),
    Mistake("20.elmo-states", "states-at-i", {3: "import torch\n" + _E +
            "    return torch.cat([forward_states, backward_states], dim=-1) * attention_mask[..., None]\n"},
            "at i itself"),
    Mistake("20.elmo-states", "padding-not-zeroed", {3: "import torch\n" + _E +
            "    B, T, D = forward_states.shape\n    out = torch.zeros(B, T, 2 * D)\n"
            "    for b in range(B):\n"
            "        real = [j for j in range(T) if attention_mask[b, j]]\n"
            "        for i in range(T):\n"
            "            before = [j for j in real if j < i]\n"
            "            after = [j for j in real if j > i]\n"
            "            if before:\n                out[b, i, :D] = forward_states[b, before[-1]]\n"
            "            if after:\n                out[b, i, D:] = backward_states[b, after[0]]\n"
            "    return out\n"}, "padding positions must be all zeros"),
    Mistake("20.elmo-states", "halves-swapped", {3: "import torch\n" + _E +
            "    B, T, D = forward_states.shape\n    out = torch.zeros(B, T, 2 * D)\n"
            "    for b in range(B):\n"
            "        real = [j for j in range(T) if attention_mask[b, j]]\n"
            "        for k, i in enumerate(real):\n"
            "            if k > 0:\n                out[b, i, D:] = backward_states[b, real[k - 1]]\n"
            "            if k + 1 < len(real):\n                out[b, i, :D] = forward_states[b, real[k + 1]]\n"
            "    return out\n"}, "halves are swapped"),
]

HONEST = [
    Honest("loops", {
        0: "T = 8\npredicted_links = {'GPT': T * (T + 1) // 2, 'ELMo': T * (T - 1), 'BERT': T * T,\n"
           "                   'prefix LM': 3 * 3 + sum(range(4, T + 1))}\n",
        1: "import torch\n" + _D + "    # one token changed at a time, each row run on its own\n"
           "    T = len(input_ids)\n"
           "    with torch.no_grad():\n        base = model(input_ids[None])[0]\n"
           "    D = torch.zeros(T, T, dtype=torch.bool)\n"
           "    for j in range(T):\n"
           "        changed = input_ids.clone()\n"
           "        changed[j] = (changed[j] + 5) % vocab_size\n"
           "        with torch.no_grad():\n            out = model(changed[None])[0]\n"
           "        for i in range(T):\n"
           "            D[i, j] = not torch.allclose(out[i], base[i], atol=1e-9, rtol=0)\n"
           "    return D\n",
        2: "import torch\n" + _M + "    B, T = attention_mask.shape\n"
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
        3: "import torch\n" + _E + "    B, T, D = forward_states.shape\n"
           "    out = forward_states.new_zeros(B, T, 2 * D)\n"
           "    for b in range(B):\n"
           "        real = torch.nonzero(attention_mask[b]).flatten().tolist()\n"
           "        for k, i in enumerate(real):\n"
           "            if k:\n                out[b, i, :D] = forward_states[b, real[k - 1]]\n"
           "            if k < len(real) - 1:\n                out[b, i, D:] = backward_states[b, real[k + 1]]\n"
           "    return out\n"}),
    Honest("tril-and-sort", {
        1: "import torch\n" + _D + "    # several random replacements per token, a dependency if any moves a logit\n"
           "    T = input_ids.numel()\n"
           "    g = torch.Generator().manual_seed(0)\n"
           "    D = torch.zeros(T, T, dtype=torch.bool)\n"
           "    with torch.no_grad():\n"
           "        base = model(input_ids.view(1, T))\n"
           "        for j in range(T):\n"
           "            for _ in range(3):\n"
           "                changed = input_ids.clone()\n"
           "                changed[j] = (changed[j] + torch.randint(1, vocab_size, (1,), generator=g)) % vocab_size\n"
           "                diff = (model(changed.view(1, T)) - base).abs()[0].max(dim=-1).values\n"
           "                D[:, j] |= diff > 1e-9\n"
           "    return D\n",
        2: "import torch\n" + _M + "    real = attention_mask.bool()\n    T = real.shape[1]\n"
           "    rank = torch.cumsum(real.int(), dim=-1)\n"
           "    prefix = real & (rank <= prefix_length.unsqueeze(-1))\n"
           "    lower = torch.ones(T, T, dtype=torch.bool).tril()\n"
           "    allowed = lower.unsqueeze(0) | prefix.unsqueeze(1)\n"
           "    return torch.einsum('bij,bj->bij', allowed.int(), real.int()).bool().unsqueeze(1)\n",
        3: "import torch\n" + _E + "    B, T, D = forward_states.shape\n"
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
