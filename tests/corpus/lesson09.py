"""Exercise 09 (Adam's first steps: predict, measure; the shortest warm-up under a cap): wrong answers a learner
writes from the task text, and honest alternatives.

Answer cells: 0 the predictions, 1 `adam_update_rms`, 2 `warmup_steps_needed`, 3 the written answer."""
from . import Honest, Mistake


def _adam(m_hat="m / (1 - beta1 ** t)", v_hat="v / (1 - beta2 ** t)", denom="v_hat.sqrt() + eps",
          lr="lrs[t - 1]", stat="update.pow(2).mean().sqrt()", steps="range(1, grads.shape[0] + 1)",
          moments="beta1, beta2"):
    return ("import torch\n\n"
            "def adam_update_rms(grads, lrs, beta1=0.9, beta2=0.999, eps=1e-8):\n"
            f"    b1, b2 = {moments}\n"
            "    m = torch.zeros_like(grads[0])\n"
            "    v = torch.zeros_like(grads[0])\n"
            "    out = []\n"
            f"    for t in {steps}:\n"
            "        g = grads[min(t, grads.shape[0]) - 1] if t > 0 else grads[0]\n"
            "        m = b1 * m + (1 - b1) * g\n"
            "        v = b2 * v + (1 - b2) * g * g\n"
            f"        m_hat = {m_hat.replace('beta1', 'b1')}\n"
            f"        v_hat = {v_hat.replace('beta2', 'b2')}\n"
            f"        update = {lr} * m_hat / ({denom})\n"
            f"        out.append({stat})\n"
            "    return torch.stack(out)\n")


_PRED = "predicted_first_update = {first}\npredicted_later_update = {later}\n"


def _warmup(body):
    return ("import torch\n\n"
            "def warmup_steps_needed(grads, peak_lr, max_update, beta1=0.9, beta2=0.999, eps=1e-8):\n"
            "    steps = grads.shape[0]\n"
            "    per_lr = torch.as_tensor(adam_update_rms(grads, torch.ones(steps, dtype=grads.dtype), beta1, beta2, eps))\n"
            "    t = torch.arange(1, steps + 1, dtype=per_lr.dtype)\n" + body)


MISTAKES = [
    # the measurement
    Mistake("09.adam-updates", "no-bias-correction", {1: _adam(m_hat="m", v_hat="v")}, "no bias correction"),
    Mistake("09.adam-updates", "only-m-corrected", {1: _adam(v_hat="v")}, "only m is bias-corrected"),
    Mistake("09.adam-updates", "only-v-corrected", {1: _adam(m_hat="m")}, "only v is bias-corrected"),
    Mistake("09.adam-updates", "steps-from-zero", {1: _adam(steps="range(grads.shape[0])", lr="lrs[t]")}, "step 1"),
    Mistake("09.adam-updates", "next-steps-lr", {1: _adam(lr="lrs[min(t, len(lrs) - 1)]")}, "next step's learning rate"),
    Mistake("09.adam-updates", "mean-absolute-update", {1: _adam(stat="update.abs().mean()")}, "mean absolute"),
    Mistake("09.adam-updates", "betas-swapped", {1: _adam(moments="beta2, beta1")}, "swapped"),
    Mistake("09.adam-updates", "update-in-units-of-lr", {1: _adam(lr="1.0")}, "units of lr"),
    Mistake("09.adam-updates", "torch-optim-adam",
            {1: "import torch\n\n"
                "def adam_update_rms(grads, lrs, beta1=0.9, beta2=0.999, eps=1e-8):\n"
                "    w = torch.zeros(grads.shape[1], dtype=grads.dtype, requires_grad=True)\n"
                "    opt = torch.optim.Adam([w], lr=1.0, betas=(beta1, beta2), eps=eps)\n"
                "    out = []\n"
                "    for g, lr in zip(grads, lrs):\n"
                "        opt.param_groups[0]['lr'] = float(lr)\n"
                "        before = w.detach().clone()\n"
                "        w.grad = g.clone()\n"
                "        opt.step()\n"
                "        out.append((w.detach() - before).pow(2).mean().sqrt())\n"
                "    return torch.stack(out)\n"},
            "write it yourself"),
    # the predictions
    Mistake("09.prediction", "first-without-bias-correction",
            {0: _PRED.format(first="0.1 / 0.001 ** 0.5", later="(0.1 / 1.9) ** 0.5")}, "bias corrections"),
    Mistake("09.prediction", "first-scales-with-the-gradient",
            {0: _PRED.format(first="1e-3", later="(0.1 / 1.9) ** 0.5")}, "does not scale with the gradient"),
    Mistake("09.prediction", "later-like-the-first", {0: _PRED.format(first="1.0", later="1.0")}, "step-1 value"),
    Mistake("09.prediction", "later-sqrt-one-minus-beta", {0: _PRED.format(first="1.0", later="0.1 ** 0.5")},
            "geometric"),
    Mistake("09.prediction", "later-a-variance", {0: _PRED.format(first="1.0", later="0.1 / 1.9")}, "square root"),
    Mistake("09.prediction", "noise-cancels", {0: _PRED.format(first="1.0", later="0.0")}, "does not cancel"),
    # the warm-up
    Mistake("09.warmup", "schedule-t-over-w",
            {2: _warmup("    for w in range(1, steps + 1):\n"
                        "        if (peak_lr * torch.clamp(t / w, max=1.0) * per_lr).max() <= max_update:\n"
                        "            return w\n")}, "off by one"),
    Mistake("09.warmup", "first-step-only",
            {2: _warmup("    for w in range(steps + 1):\n"
                        "        if peak_lr / (w + 1) * per_lr[0] <= max_update:\n"
                        "            return w\n")}, "> max_update"),
    Mistake("09.warmup", "always-warm-up",
            {2: _warmup("    for w in range(1, steps + 1):\n"
                        "        if (peak_lr * torch.clamp(t / (w + 1), max=1.0) * per_lr).max() <= max_update:\n"
                        "            return w\n")}, "smallest"),
    Mistake("09.warmup", "whole-run-warm-up", {2: _warmup("    return steps\n")}, "smallest"),
]

HONEST = [
    Honest("vectorised-moments-and-bisection", {
        0: "predicted_first_update = 1   # m̂ = g, v̂ = g² at step 1\npredicted_later_update = 0.23\n",
        1: "import torch\n\n"
           "def adam_update_rms(grads, lrs, beta1=0.9, beta2=0.999, eps=1e-8):\n"
           "    T = grads.shape[0]\n"
           "    k = torch.arange(T, dtype=torch.float64)\n"
           "    age = (k[:, None] - k[None, :]).clamp(min=0)              # (T, T): how old gradient s is at step t\n"
           "    past = (k[None, :] <= k[:, None]).double()\n"
           "    w1 = (1 - beta1) * beta1 ** age * past / (1 - beta1 ** (k[:, None] + 1))\n"
           "    w2 = (1 - beta2) * beta2 ** age * past / (1 - beta2 ** (k[:, None] + 1))\n"
           "    g = grads.double()\n"
           "    m_hat, v_hat = w1 @ g, w2 @ (g * g)                        # (T, n)\n"
           "    update = lrs.double()[:, None] * m_hat / (v_hat.sqrt() + eps)\n"
           "    return update.pow(2).mean(dim=1).sqrt().tolist()\n",
        2: "import torch\n\n"
           "def warmup_steps_needed(grads, peak_lr, max_update, beta1=0.9, beta2=0.999, eps=1e-8):\n"
           "    T = grads.shape[0]\n"
           "    size = torch.tensor(adam_update_rms(grads, torch.ones(T, dtype=torch.float64), beta1, beta2, eps))\n"
           "    t = torch.arange(1, T + 1, dtype=torch.float64)\n"
           "    ok = lambda w: bool((peak_lr * torch.minimum(t / (w + 1), torch.ones(T, dtype=torch.float64)) * size).max() <= max_update)\n"
           "    low, high = 0, T                                           # the largest update shrinks as w grows\n"
           "    while low < high:\n"
           "        mid = (low + high) // 2\n"
           "        low, high = (low, mid) if ok(mid) else (mid + 1, high)\n"
           "    return low\n",
    }),
    Honest("plain-loops-float-lists", {
        0: "import math\nbeta1 = 0.9\npredicted_first_update = 1.0\n"
           "predicted_later_update = math.sqrt(sum(((1 - beta1) * beta1 ** k) ** 2 for k in range(1000)))\n",
        1: "import math\nimport torch\n\n"
           "def adam_update_rms(grads, lrs, beta1=0.9, beta2=0.999, eps=1e-8):\n"
           "    state = {'m': 0.0 * grads[0], 'v': 0.0 * grads[0]}\n"
           "    sizes = []\n"
           "    for step, (g, lr) in enumerate(zip(grads, lrs), start=1):\n"
           "        state['m'] = state['m'].mul(beta1).add(g, alpha=1 - beta1)\n"
           "        state['v'] = state['v'].mul(beta2).addcmul(g, g, value=1 - beta2)\n"
           "        denom = (state['v'] / (1 - beta2 ** step)).sqrt().add(eps)\n"
           "        delta = -float(lr) / (1 - beta1 ** step) * state['m'] / denom\n"
           "        sizes.append(math.sqrt(float((delta * delta).sum()) / delta.numel()))\n"
           "    return sizes\n",
        2: "import torch\n\n"
           "def warmup_steps_needed(grads, peak_lr, max_update, beta1=0.9, beta2=0.999, eps=1e-8):\n"
           "    T = len(grads)\n"
           "    per_lr = adam_update_rms(grads, torch.ones(T, dtype=torch.float64), beta1, beta2, eps)\n"
           "    # step t, warm-up w: lr = peak * t / (w + 1) while t <= w; so w must be at least peak * t * size_t / cap - 1\n"
           "    w = 0\n"
           "    while True:\n"
           "        worst = max(peak_lr * min(1.0, t / (w + 1)) * float(s) for t, s in enumerate(per_lr, start=1))\n"
           "        if worst <= max_update:\n"
           "            return w\n"
           "        w += 1\n",
    }),
]
