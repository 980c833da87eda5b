"""Exercise 04 (cross-attention and generation FLOPs; generation's growth predicted): wrong answers a
learner writes, and honest alternatives.

Answer cells: 0 cross_attention_flops, 1 the predicted exponents, 2 decode_flops, 3 the written answer."""
from . import Honest, Mistake

_CROSS = "def cross_attention_flops(n_q, n_kv, d):\n"
_DEC = "def decode_flops(n_prompt, n_new, d, kv_cache=True):\n"


def _decode(prompt="cross_attention_flops(n_prompt, n_prompt, d)", cached="8 * d * d + 4 * length * d",
            uncached="cross_attention_flops(length, length, d)", lengths="range(n_prompt + 1, n_prompt + n_new + 1)"):
    return (_DEC + f"    total = {prompt}\n    for length in {lengths}:\n"
            f"        total += ({cached}) if kv_cache else ({uncached})\n    return total\n")


MISTAKES = [
    Mistake("04.cross-flops", "multiply-adds", {0: _CROSS + "    return 2 * n_q * d * d + 2 * n_kv * d * d + 2 * n_q * n_kv * d\n"},
            "2 FLOPs per multiply-add"),
    Mistake("04.cross-flops", "self-attention-formula", {0: _CROSS + "    return 8 * n_q * d * d + 4 * n_q * n_q * d\n"},
            "scores are (n_q, n_kv)"),
    Mistake("04.cross-flops", "all-projections-on-queries", {0: _CROSS + "    return 8 * n_q * d * d + 4 * n_q * n_kv * d\n"},
            "K and V project"),
    Mistake("04.cross-flops", "q-k-v-on-queries", {0: _CROSS + "    return 6 * n_q * d * d + 2 * n_kv * d * d + 4 * n_q * n_kv * d\n"},
            "what acts on each of the n_q query tokens"),
    Mistake("04.cross-flops", "bias-counted", {0: _CROSS + "    return 4 * n_q * d * d + 4 * n_kv * d * d + 4 * n_q * n_kv * d + 4 * n_q * d\n"},
            "a term in n_q·d"),
    Mistake("04.cross-flops", "measured-with-the-counter", {0: "import torch\nfrom torch.utils.flop_counter import FlopCounterMode\n"
            "from course_lib.attention import MultiHeadAttention\n\n" + _CROSS +
            "    q, m = torch.randn(1, n_q, d, device='meta'), torch.randn(1, n_kv, d, device='meta')\n"
            "    with FlopCounterMode(display=False) as counter:\n"
            "        MultiHeadAttention(d, 1).to('meta')(q, m, m)\n"
            "    return counter.get_total_flops()\n"}, "FlopCounterMode"),
    Mistake("04.cross-flops", "only-qk", {0: _CROSS + "    return 4 * n_q * d * d + 4 * n_kv * d * d + 2 * n_q * n_kv * d\n"},
            "only one of"),
    Mistake("04.decode-cached", "context-without-itself", {2: _decode(cached="8 * d * d + 4 * (length - 1) * d")},
            "itself"),
    Mistake("04.decode-cached", "no-prompt-pass", {2: _decode(prompt="0")}, "prompt's own pass"),
    Mistake("04.decode-cached", "reprojects-the-cache", {2: _decode(cached="8 * d * d + 4 * length * d * d + 4 * length * d - 4 * d * d")},
            "projections of every token so far"),
    Mistake("04.decode-cached", "half-the-prompt-attention", {2: _decode(prompt="8 * n_prompt * d * d + 2 * n_prompt ** 2 * d")},
            "the prompt's attention"),
    Mistake("04.decode-cached", "ignores-kv-cache-flag", {2: _decode(cached="cross_attention_flops(length, length, d)")},
            "without a cache"),
    Mistake("04.decode-uncached", "ignores-the-flag-other-way", {2: _decode(uncached="8 * d * d + 4 * length * d")},
            "with a cache"),
    Mistake("04.decode-uncached", "uncached-off-by-one", {2: _decode(lengths="range(n_prompt, n_prompt + n_new)")},
            "off by one"),
    Mistake("04.decode-uncached", "uncached-only-one-product", {2: _decode(uncached="8 * length * d * d + 2 * length * length * d")},
            "every token against every token"),
    Mistake("04.decode-uncached", "uncached-no-prompt", {2: _decode(prompt="0")}, "prompt"),
    # 04.predict-growth: the derivation
    Mistake("04.predict-growth", "one-step-exponents", {1: "predicted_exponent_cached = 1\npredicted_exponent_uncached = 2\n"},
            "one step's exponents"),
    Mistake("04.predict-growth", "cache-changes-nothing", {1: "predicted_exponent_cached = 3\npredicted_exponent_uncached = 3\n"},
            "one new query against the L cached keys"),
    Mistake("04.predict-growth", "quadratic-both", {1: "predicted_exponent_cached = 2\npredicted_exponent_uncached = 2\n"},
            "runs the whole layer again"),
    Mistake("04.predict-growth", "as-a-string", {1: "predicted_exponent_cached = 'n^2'\npredicted_exponent_uncached = 'n^3'\n"},
            "should be a number"),
]

HONEST = [
    Honest("closed-forms", {
        0: _CROSS + "    return 4 * d * (d * (n_q + n_kv) + n_q * n_kv)\n",
        1: "predicted_exponent_cached = 2.0\npredicted_exponent_uncached = 3.0\n",
        2: _DEC + "    prompt = 8 * n_prompt * d * d + 4 * n_prompt ** 2 * d\n"
                  "    a, b = n_prompt + 1, n_prompt + n_new\n"
                  "    s1 = (b * (b + 1) - (a - 1) * a) // 2\n"
                  "    s2 = (b * (b + 1) * (2 * b + 1) - (a - 1) * a * (2 * a - 1)) // 6\n"
                  "    if kv_cache:\n        return prompt + 8 * d * d * n_new + 4 * d * s1\n"
                  "    return prompt + 8 * d * d * s1 + 4 * d * s2\n"}),
    Honest("helpers-and-a-list", {
        0: "import torch\n\ndef _matmul(m, k, p):\n    return 2 * m * k * p\n\n" + _CROSS +
           "    return (_matmul(n_q, d, d) * 2 + _matmul(n_kv, d, d) * 2 + _matmul(n_q, d, n_kv) + _matmul(n_q, n_kv, d))\n",
        1: "import torch\npredicted_exponent_cached, predicted_exponent_uncached = torch.tensor(2), 3\n",
        2: _DEC + "    steps = [n_prompt + t for t in range(1, n_new + 1)]\n"
                  "    per_step = [cross_attention_flops(1, L, d) - 4 * (L - 1) * d * d if kv_cache else cross_attention_flops(L, L, d)\n"
                  "                for L in steps]\n"
                  "    return int(cross_attention_flops(n_prompt, n_prompt, d) + sum(per_step))\n"}),
]
