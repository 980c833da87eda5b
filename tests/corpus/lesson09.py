"""Exercise 09 (cosine warm-up with a floor, fairseq's inverse square root): wrong answers and honest alternatives."""
from . import Honest, Mistake

_COS = "import math\n\ndef warmup_cosine(step, warmup_steps, total_steps, peak_lr=1.0, min_lr=0.0):\n"
_INV = "import math\n\ndef inverse_sqrt(step, warmup_steps, peak_lr, init_lr=0.0):\n"
_WARM = "    if step < warmup_steps:\n        return peak_lr * step / warmup_steps\n"

MISTAKES = [
    Mistake("09.warmup-cosine", "cosine-over-total-steps",
            {0: _COS + _WARM + "    p = min(1.0, step / total_steps)\n"
                "    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * p))\n"},
            "total_steps - warmup_steps"),
    Mistake("09.warmup-cosine", "no-clamp-after-the-end",
            {0: _COS + _WARM + "    p = (step - warmup_steps) / (total_steps - warmup_steps)\n"
                "    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * p))\n"},
            "must not come back up"),
    Mistake("09.warmup-cosine", "floor-ignored",
            {0: _COS + _WARM + "    p = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))\n"
                "    return 0.5 * peak_lr * (1 + math.cos(math.pi * p))\n"},
            "expected 0.55"),
    Mistake("09.warmup-cosine", "floor-added-to-peak",
            {0: _COS + _WARM + "    p = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))\n"
                "    return min_lr + 0.5 * peak_lr * (1 + math.cos(math.pi * p))\n"},
            "min_lr + 0.5 * (peak_lr - min_lr)"),
    Mistake("09.warmup-cosine", "warm-up-off-by-one",
            {0: _COS + "    if step < warmup_steps:\n        return peak_lr * (step + 1) / warmup_steps\n"
                "    p = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))\n"
                "    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * p))\n"},
            "step=0"),
    Mistake("09.warmup-cosine", "warm-up-from-the-floor",
            {0: _COS + "    if step < warmup_steps:\n        return min_lr + (peak_lr - min_lr) * step / warmup_steps\n"
                "    p = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))\n"
                "    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(math.pi * p))\n"},
            "not from min_lr"),
    Mistake("09.warmup-cosine", "full-cosine-not-half",
            {0: _COS + _WARM + "    p = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))\n"
                "    return min_lr + 0.5 * (peak_lr - min_lr) * (1 + math.cos(2 * math.pi * p))\n"},
            "step=60"),
    Mistake("09.inverse-sqrt", "inverse-not-sqrt",
            {1: _INV + "    if step <= warmup_steps:\n        return init_lr + (peak_lr - init_lr) * step / warmup_steps\n"
                "    return peak_lr * warmup_steps / step\n"},
            "square root"),
    Mistake("09.inverse-sqrt", "init-lr-ignored",
            {1: _INV + "    if step <= warmup_steps:\n        return peak_lr * step / warmup_steps\n"
                "    return peak_lr * math.sqrt(warmup_steps / step)\n"},
            "init_lr + (peak_lr - init_lr)"),
    Mistake("09.inverse-sqrt", "noam-peak-not-peak-lr",
            {1: _INV + "    if step <= warmup_steps:\n        return init_lr + (peak_lr - init_lr) * step / warmup_steps\n"
                "    return peak_lr / math.sqrt(step)\n"},
            "continuous at the peak"),
    Mistake("09.inverse-sqrt", "warm-up-from-step-0",
            {1: _INV + "    if step <= warmup_steps:\n        return init_lr + (peak_lr - init_lr) * (step - 1) / warmup_steps\n"
                "    return peak_lr * math.sqrt(warmup_steps / step)\n"},
            "step = warmup_steps gives peak_lr"),
]

HONEST = [
    Honest("min-max-and-numpy", {
        0: "import numpy as np\n\ndef warmup_cosine(step, warmup_steps, total_steps, peak_lr=1.0, min_lr=0.0):\n"
           "    warm = peak_lr * step / max(warmup_steps, 1)\n"
           "    t = np.clip((step - warmup_steps) / (total_steps - warmup_steps), 0.0, 1.0)\n"
           "    decay = min_lr + (peak_lr - min_lr) * (np.cos(np.pi * t) + 1) / 2\n"
           "    return float(warm if step < warmup_steps else decay)\n",
        1: "def inverse_sqrt(step, warmup_steps, peak_lr, init_lr=0.0):\n"
           "    slope = (peak_lr - init_lr) / warmup_steps\n"
           "    return min(init_lr + slope * step, peak_lr) if step <= warmup_steps else peak_lr * warmup_steps ** 0.5 * step ** -0.5\n"}),
    Honest("helpers-and-torch", {
        0: "import math\n\ndef _half_cosine(p):\n    return 0.5 * (1 + math.cos(math.pi * p))\n\n"
           "def warmup_cosine(step, warmup_steps, total_steps, peak_lr=1.0, min_lr=0.0):\n"
           "    if warmup_steps > 0 and step < warmup_steps:\n        return step / warmup_steps * peak_lr\n"
           "    if step >= total_steps:\n        return min_lr\n"
           "    return min_lr + (peak_lr - min_lr) * _half_cosine((step - warmup_steps) / (total_steps - warmup_steps))\n",
        1: "import torch\n\ndef inverse_sqrt(step, warmup_steps, peak_lr, init_lr=0.0):\n"
           "    s = torch.tensor(float(step), dtype=torch.float64)\n"
           "    if step > warmup_steps:\n        return (peak_lr * torch.rsqrt(s / warmup_steps)).item()\n"
           "    return (init_lr + (peak_lr - init_lr) * s / warmup_steps).item()\n"}),
    Honest("noam-rescaled", {
        1: "def inverse_sqrt(step, warmup_steps, peak_lr, init_lr=0.0):\n"
           "    factor = peak_lr * warmup_steps ** 0.5\n"
           "    noam = factor * min(step ** -0.5, step * warmup_steps ** -1.5)\n"
           "    return noam + init_lr * (1 - step / warmup_steps) if step <= warmup_steps else noam\n"}),
]
