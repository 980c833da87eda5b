"""Exercise 23 (T5's raw length for a fixed input, XLNet's partial-prediction masks): wrong answers a learner
writes, honest alternatives. Answer cells: 0 the prediction, 1 t5_raw_length, 2 partial_prediction_masks,
3 the written answer."""
from . import Honest, Mistake

_T = "def t5_raw_length(inputs_length, noise_density, mean_noise_span_length):\n"
_X = "def partial_prediction_masks(order, num_predict):\n"


def _t5(input_len="n - noise + spans + 1", target_len="noise + spans + 1", pick="n"):
    """Count up from 1 until the input no longer fits; the arguments make one mistake each."""
    return {1: _T + "    def lengths(n):\n"
            "        noise = round(n * noise_density)\n"
            "        spans = round(noise / mean_noise_span_length)\n"
            f"        return {input_len}, {target_len}\n"
            "    n = 1\n"
            "    while lengths(n + 1)[0] <= inputs_length:\n        n += 1\n"
            f"    n = {pick}\n"
            "    return n, lengths(n)[1]\n"}


def _xlnet(context="~target[None, :]", target_row="visible | itself", query="visible & target[:, None]",
           rank="rank[order] = torch.arange(T)", target="rank >= T - num_predict"):
    return {2: "import torch\n" + _X +
            "    T = order.numel()\n"
            "    rank = torch.empty_like(order)\n"
            f"    {rank}\n"
            f"    target = {target}\n"
            "    earlier = rank[None, :] < rank[:, None]\n"
            "    visible = ~target[None, :] | earlier\n"
            "    itself = torch.eye(T, dtype=torch.bool)\n"
            f"    content = torch.where(target[:, None], {target_row}, {context})\n"
            f"    query = {query}\n"
            "    return content, query\n"}


def _predict(raw, target):
    return {0: f"predicted_raw_tokens = {raw}\npredicted_target_length = {target}\n"}


MISTAKES = [
    Mistake("23.t5-raw-length", "no-end-of-sequence", _t5(input_len="n - noise + spans", target_len="noise + spans"),
            "end-of-sequence"),
    Mistake("23.t5-raw-length", "no-sentinels", _t5(input_len="n - noise + 1", target_len="noise + 1"), "sentinel"),
    Mistake("23.t5-raw-length", "noise-stays-in-the-input", _t5(input_len="n + spans + 1"),
            "noise tokens leave the input"),
    Mistake("23.t5-raw-length", "fewest-raw-tokens", _t5(
        pick="min(m for m in range(1, n + 1) if lengths(m)[0] == lengths(n)[0])"), "most raw tokens"),
    Mistake("23.t5-raw-length", "one-too-many", _t5(pick="n + 1"), "too many"),
    Mistake("23.t5-prediction", "the-lessons-fractions", _predict(569, 115), "lesson's setting"),
    Mistake("23.t5-prediction", "no-sentinels", _predict(681, 161), "sentinel"),
    Mistake("23.t5-prediction", "target-without-sentinels", _predict(639, 161), "sentinel"),
    Mistake("23.xlnet-partial", "the-lessons-full-permutation-masks", _xlnet(
        context="~target[None, :] & (rank[None, :] <= rank[:, None])"), "both directions"),
    Mistake("23.xlnet-partial", "context-reads-targets", _xlnet(context="torch.ones(T, T, dtype=torch.bool)"),
            "leak"),
    Mistake("23.xlnet-partial", "targets-first-in-the-order", _xlnet(target="rank < num_predict"), "last ones"),
    Mistake("23.xlnet-partial", "query-sees-itself", _xlnet(query="(visible | itself) & target[:, None]"),
            "copying"),
    Mistake("23.xlnet-partial", "order-taken-as-ranks", _xlnet(rank="rank = order.clone()"), "order[t]"),
]

HONEST = [
    Honest("loops", {
        0: "predicted_raw_tokens = 639\npredicted_target_length = 0.3 * 639 + 1\n",
        1: _T + "    def lengths(n):\n"
           "        noise = round(n * noise_density)\n"
           "        spans = round(noise / mean_noise_span_length)\n"
           "        return n - noise + spans + 1, noise + spans + 1\n"
           "    # bisection on the largest n whose input fits (the input length never shrinks as n grows)\n"
           "    lo, hi = 1, 2\n"
           "    while lengths(hi)[0] <= inputs_length:\n        hi *= 2\n"
           "    while hi - lo > 1:\n"
           "        mid = (lo + hi) // 2\n"
           "        if lengths(mid)[0] <= inputs_length:\n            lo = mid\n"
           "        else:\n            hi = mid\n"
           "    return lo, lengths(lo)[1]\n",
        2: "import torch\n" + _X +
           "    T = len(order)\n"
           "    rank = {int(p): t for t, p in enumerate(order)}\n"
           "    predicted = {p for p in range(T) if rank[p] >= T - num_predict}\n"
           "    content = torch.zeros(T, T, dtype=torch.long)   # 0/1 masks\n"
           "    query = torch.zeros(T, T, dtype=torch.long)\n"
           "    for i in range(T):\n"
           "        for j in range(T):\n"
           "            if i not in predicted:\n"
           "                content[i, j] = int(j not in predicted)\n"
           "            else:\n"
           "                before = j not in predicted or rank[j] < rank[i]\n"
           "                content[i, j] = int(before or i == j)\n"
           "                query[i, j] = int(before)\n"
           "    return content, query\n"}),
    Honest("half-up-rounding-and-full-query-rows", {
        0: "predicted_raw_tokens = 640.0\npredicted_target_length = 192\n",
        1: "import math\n\n" + _T + "    def rnd(x):\n        return math.floor(x + 0.5)   # halves up\n"
           "    def input_length(n):\n"
           "        noise = rnd(n * noise_density)\n"
           "        return n - noise + rnd(noise / mean_noise_span_length) + 1\n"
           "    n = 1\n"
           "    while input_length(n + 1) <= inputs_length:\n        n += 1\n"
           "    noise = rnd(n * noise_density)\n"
           "    return n, noise + rnd(noise / mean_noise_span_length) + 1\n",
        2: "import torch\n" + _X +
           "    # query rows of context positions are unused: here they copy the content rows\n"
           "    T = order.shape[0]\n"
           "    rank = torch.argsort(order)\n"
           "    is_target = rank >= T - num_predict\n"
           "    j_context = ~is_target.unsqueeze(0)\n"
           "    j_before = rank.unsqueeze(0) < rank.unsqueeze(1)\n"
           "    content = (j_context & ~is_target.unsqueeze(1)) | (is_target.unsqueeze(1) & (j_context | j_before |"
           " torch.eye(T, dtype=torch.bool)))\n"
           "    query = torch.where(is_target.unsqueeze(1), j_context | j_before, content)\n"
           "    return content, query\n"}),
]
