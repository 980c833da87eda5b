"""Exercise 01 (q and k of variance σ²: the factor that keeps the scores' variance at 1, derived; var(q·k)
measured; the largest softmax weight predicted and measured): wrong answers a learner writes from the task
text, and honest alternatives.

Answer cells: 0 score_scale, 1 score_variance, 2 predicted_top_weight, 3 top_weight, 4 the written answer."""
from . import Honest, Mistake

_CHECK_SCALE = ("    if d_k < 1:\n        raise ValueError(f'd_k must be positive, got {d_k}')\n"
                "    if not sigma > 0:\n        raise ValueError(f'sigma must be positive, got {sigma}')\n")
_CHECK_N = "    if n < 2:\n        raise ValueError(f'n must be at least 2, got {n}')\n"


def _scale(body, checks=_CHECK_SCALE):
    return {0: "import math\n\ndef score_scale(d_k, sigma):\n" + checks + f"    return {body}\n"}


def _variance(q="torch.randn(n, d_k, generator=generator, dtype=torch.float64) * sigma",
              k="torch.randn(n, d_k, generator=generator, dtype=torch.float64) * sigma",
              scores="(q * k).sum(dim=-1)", stat="scores.var().item()", checks=_CHECK_SCALE + _CHECK_N):
    return {1: "import torch\n\ndef score_variance(d_k, sigma, n, generator):\n" + checks +
            f"    q = {q}\n    k = {k}\n    scores = {scores}\n    return {stat}\n"}


def _top(q="torch.randn(n, 1, d_k, generator=generator) * sigma",
         k="torch.randn(n, n_keys, d_k, generator=generator) * sigma",
         scores="scale * (q @ k.transpose(-2, -1)).squeeze(-2)",
         stat="scores.softmax(dim=-1).amax(dim=-1).mean().item()"):
    return {3: "import torch\n\ndef top_weight(d_k, n_keys, scale, sigma, n, generator):\n"
            f"    q = {q}\n    k = {k}\n    scores = {scores}\n    return {stat}\n"}


MISTAKES = [
    # 01.scale: the derivation
    Mistake("01.scale", "sigma-ignored", _scale("1 / math.sqrt(d_k)"), "σ ignored"),
    Mistake("01.scale", "sigma-not-squared", _scale("1 / (sigma * math.sqrt(d_k))"), "σ instead of σ²"),
    Mistake("01.scale", "divides-by-d_k", _scale("1 / (sigma ** 2 * d_k)"), "not √d_k"),
    Mistake("01.scale", "the-spread-itself", _scale("sigma ** 2 * math.sqrt(d_k)"), "its inverse"),
    Mistake("01.scale", "variance-of-one-product", _scale("1 / (sigma ** 4 * math.sqrt(d_k))"), "σ⁴ in place of σ²"),
    # 01.score-variance: the measurement
    Mistake("01.score-variance", "std-sigma-squared",
            _variance(q="torch.randn(n, d_k, generator=generator, dtype=torch.float64) * sigma ** 2",
                      k="torch.randn(n, d_k, generator=generator, dtype=torch.float64) * sigma ** 2"),
            "standard deviation σ²"),
    Mistake("01.score-variance", "mean-not-sum", _variance(scores="(q * k).mean(dim=-1)"), "mean over the d_k"),
    Mistake("01.score-variance", "returns-the-std", _variance(stat="scores.std().item()"), "a standard deviation"),
    Mistake("01.score-variance", "formula-not-measurement", _variance(stat="float(d_k * sigma ** 4)"),
            "a formula does not fluctuate"),
    Mistake("01.score-variance", "global-random-state",
            _variance(q="torch.randn(n, d_k, dtype=torch.float64) * sigma",
                      k="torch.randn(n, d_k, dtype=torch.float64) * sigma"), "generator=generator"),
    Mistake("01.score-variance", "one-query-for-every-pair",
            _variance(q="torch.randn(1, d_k, generator=generator, dtype=torch.float64) * sigma"), "fresh q"),
    # 01.conformance: bad arguments
    Mistake("01.conformance", "no-validation", {**_scale("1 / (sigma ** 2 * math.sqrt(d_k))", checks=""),
                                                **_variance(checks="")}, "expected a ValueError"),
    Mistake("01.conformance", "assert-instead-of-raise",
            {**_scale("1 / (sigma ** 2 * math.sqrt(d_k))", checks="    assert d_k >= 1 and sigma > 0, 'bad d_k or sigma'\n"),
             **_variance(checks="    assert d_k >= 1 and sigma > 0 and n >= 2\n")}, "AssertionError"),
    Mistake("01.conformance", "message-names-nothing",
            {**_scale("1 / (sigma ** 2 * math.sqrt(d_k))",
                      checks="    if d_k < 1 or sigma <= 0:\n        raise ValueError('invalid input')\n")},
            "should name the argument"),
    Mistake("01.conformance", "zero-sigma-allowed",
            _scale("1 / (sigma ** 2 * math.sqrt(d_k))",
                   checks="    if d_k < 1:\n        raise ValueError('d_k must be positive')\n"
                          "    if sigma < 0:\n        raise ValueError('sigma must not be negative')\n"),
            "ZeroDivisionError"),
    Mistake("01.conformance", "n-unchecked", _variance(checks=_CHECK_SCALE), "score_variance(4, 1.0, 1"),
    # 01.top-weight: the measurement
    Mistake("01.top-weight", "divides-by-scale", _top(scores="(q @ k.transpose(-2, -1)).squeeze(-2) / scale"),
            "divided by `scale`"),
    Mistake("01.top-weight", "sigma-ignored", _top(q="torch.randn(n, 1, d_k, generator=generator)",
                                                   k="torch.randn(n, n_keys, d_k, generator=generator)"),
            "σ ignored"),
    Mistake("01.top-weight", "std-sigma-squared", _top(q="torch.randn(n, 1, d_k, generator=generator) * sigma ** 2",
                                                       k="torch.randn(n, n_keys, d_k, generator=generator) * sigma ** 2"),
            "standard deviation σ²"),
    Mistake("01.top-weight", "mean-of-all-weights", _top(stat="scores.softmax(dim=-1).mean().item()"),
            "mean of all the weights"),
    Mistake("01.top-weight", "softmax-over-the-rows", _top(stat="scores.softmax(dim=0).amax(dim=-1).mean().item()"),
            "softmax over"),
]

HONEST = [
    Honest("einsum-float32-logsumexp", {
        0: "import math\n\n"
           "def score_scale(d_k, sigma):\n"
           "    if not (isinstance(d_k, int) and d_k >= 1):\n"
           "        raise ValueError(f'd_k={d_k!r}: expected a positive int')\n"
           "    if not (sigma > 0 and math.isfinite(sigma)):\n"
           "        raise ValueError(f'sigma={sigma!r}: expected a positive standard deviation')\n"
           "    std_of_score = math.sqrt(d_k * sigma ** 4)     # d_k products, each of variance sigma^2 * sigma^2\n"
           "    return 1.0 / std_of_score\n",
        1: "import torch\n\n"
           "def score_variance(d_k, sigma, n, generator):\n"
           "    for name, ok in (('d_k', d_k >= 1), ('sigma', sigma > 0), ('n', n >= 2)):\n"
           "        if not ok:\n"
           "            raise ValueError(f'{name} out of range')\n"
           "    q = sigma * torch.randn(n, d_k, generator=generator)\n"
           "    k = sigma * torch.randn(n, d_k, generator=generator)\n"
           "    s = torch.einsum('nd,nd->n', q, k).double()\n"
           "    return float((s * s).mean())                    # the mean of q·k is 0: E[s^2] is its variance\n",
        2: "import torch\npredicted_top_weight = torch.tensor(0.5)\n",
        3: "import torch\n\n"
           "def top_weight(d_k, n_keys, scale, sigma, n, generator):\n"
           "    q = torch.randn(n, d_k, generator=generator) * sigma\n"
           "    k = torch.randn(n, n_keys, d_k, generator=generator) * sigma\n"
           "    s = scale * torch.einsum('nd,nkd->nk', q, k)\n"
           "    top = (s.amax(dim=-1) - torch.logsumexp(s, dim=-1)).exp()   # the largest weight, without the softmax\n"
           "    return top.mean().item()\n",
    }),
    Honest("float64-keys-first-row-loop", {
        0: "import torch\n\n"
           "def score_scale(d_k, sigma):\n"
           "    if d_k <= 0:\n"
           "        raise ValueError('invalid d_k: ' + str(d_k))\n"
           "    if sigma <= 0:\n"
           "        raise ValueError('invalid sigma: ' + str(sigma))\n"
           "    var = torch.tensor(float(sigma), dtype=torch.float64) ** 4 * d_k\n"
           "    return var.rsqrt()\n",
        1: "import torch\n\n"
           "def score_variance(d_k, sigma, n, generator):\n"
           "    if d_k < 1 or sigma <= 0:\n"
           "        raise ValueError('d_k' if d_k < 1 else 'sigma')\n"
           "    if n < 2:\n"
           "        raise ValueError(f'need n >= 2 samples (n = {n})')\n"
           "    pairs = torch.randn(2, n, d_k, generator=generator, dtype=torch.float64) * sigma\n"
           "    scores = (pairs[0] * pairs[1]).sum(-1)\n"
           "    return torch.var(scores, correction=0)\n",
        2: "predicted_top_weight = 0.9\n",
        3: "import torch\n\n"
           "def top_weight(d_k, n_keys, scale, sigma, n, generator):\n"
           "    keys = torch.randn(n, n_keys, d_k, generator=generator, dtype=torch.float64) * sigma\n"
           "    queries = torch.randn(n, d_k, generator=generator, dtype=torch.float64) * sigma\n"
           "    total = 0.0\n"
           "    for q, k in zip(queries, keys):\n"
           "        weights = torch.softmax(k @ q * scale, dim=0)\n"
           "        total += weights.max().item()\n"
           "    return total / n\n",
    }),
]
