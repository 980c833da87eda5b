"""Exercise 02 (W_Q ≠ W_K built by hand for any relation; how far one shared matrix gets on mutual pairs,
predicted and built): wrong answers a learner writes from the task text, and honest alternatives.

Answer cells: 0 look_elsewhere, 1 predicted_shared_wins, 2 best_shared, 3 the written answer."""
from . import Honest, Mistake

_L = "import math\nimport torch\n\ndef look_elsewhere(x, target):\n"
_B = "import torch\n\ndef best_shared(x, pairs):\n"


def _look(wanted="wanted[torch.arange(T), target] = 1.0", c="20.0 * math.sqrt(T)",
          ret="x_pinv @ wanted * c, x_pinv", inverse="torch.linalg.pinv(x)"):
    return {0: _L + "    T = x.shape[0]\n"
            "    wanted = torch.zeros(T, T)\n"
            f"    {wanted}\n"
            f"    c = {c}\n"
            f"    x_pinv = {inverse}\n"
            f"    return {ret}\n"}


def _best(short="1.0", long="2.0", axis="torch.arange(m)", ret="torch.linalg.pinv(x) @ y"):
    return {2: _B + "    T, m = x.shape[0], pairs.shape[0]\n"
            "    y = torch.zeros(T, m)\n"
            f"    y[pairs[:, 0], {axis}] = {short}\n"
            f"    y[pairs[:, 1], {axis}] = {long}\n"
            f"    return {ret}\n"}


MISTAKES = [
    # 02.look-elsewhere: the construction
    Mistake("02.look-elsewhere", "one-matrix-for-both", _look(ret="x_pinv @ wanted * c, x_pinv @ wanted * c"),
            "Gram matrix"),
    Mistake("02.look-elsewhere", "raw-attention", {0: _L + "    eye = torch.eye(x.shape[1])\n    return eye, eye\n"},
            "Gram matrix"),
    Mistake("02.look-elsewhere", "assumes-one-hot-tokens", {0: _L +
            "    T, d = x.shape\n"
            "    w_q = torch.zeros(d, T)\n"
            "    w_q[torch.arange(T), target] = 20.0 * math.sqrt(T)\n"
            "    return w_q, torch.eye(d, T)\n"}, "one-hot tokens"),
    Mistake("02.look-elsewhere", "transpose-for-inverse", _look(inverse="x.T"), "one-hot tokens"),
    Mistake("02.look-elsewhere", "relation-backwards", _look(wanted="wanted[target, torch.arange(T)] = 1.0"),
            "backwards"),
    Mistake("02.look-elsewhere", "no-margin", _look(c="1.0"), "not by enough"),
    # 02.shared-bound: the prediction
    Mistake("02.shared-bound", "as-many-as-separate", {1: "predicted_shared_wins = 10\n"}, "W_Q ≠ W_K"),
    Mistake("02.shared-bound", "self-always-wins", {1: "predicted_shared_wins = 0\n"}, "plural"),
    Mistake("02.shared-bound", "somewhere-between", {1: "predicted_shared_wins = 7\n"}, "Cauchy-Schwarz"),
    Mistake("02.shared-bound", "not-a-number", {1: "predicted_shared_wins = 'five'\n"}, "a number"),
    # 02.shared-best: the best shared matrix
    Mistake("02.shared-best", "equal-lengths-tie", _best(long="1.0"), "neither token"),
    Mistake("02.shared-best", "orthogonal-partners", {2: _B +
            "    y = torch.eye(x.shape[0])\n    return torch.linalg.pinv(x) @ y\n"}, "neither token"),
    Mistake("02.shared-best", "every-pair-on-one-axis", _best(axis="0"), "neither token"),
    Mistake("02.shared-best", "returns-two-matrices", _best(ret="torch.linalg.pinv(x) @ y, torch.linalg.pinv(x) @ y"),
            "one matrix"),
]

HONEST = [
    Honest("lstsq-wide-dk-swapped-roles", {
        0: "import torch\n\ndef look_elsewhere(x, target):\n"
           "    T, d = x.shape\n"
           "    # solve x @ W_K = E (first T coordinates), x @ W_Q = 12 * E P: any d_k >= T works\n"
           "    E = torch.eye(T, d, dtype=torch.float64)\n"
           "    P = torch.nn.functional.one_hot(target, d).double()\n"
           "    w_k = torch.linalg.lstsq(x.double(), E).solution\n"
           "    w_q = torch.linalg.lstsq(x.double(), 12.0 * d ** 0.5 * P).solution\n"
           "    return w_q, w_k\n",
        1: "predicted_shared_wins = 5.0\n",
        2: "import torch\n\ndef best_shared(x, pairs):\n"
           "    T, m = x.shape[0], pairs.shape[0]\n"
           "    y = torch.zeros(T, m, dtype=torch.float64)\n"
           "    for p, (a, b) in enumerate(pairs.tolist()):\n"
           "        y[a, p], y[b, p] = 3.0, 1.0      # now b is the short one and wins\n"
           "    return torch.linalg.lstsq(x.double(), y).solution\n",
    }),
    Honest("rotated-keys-float64-tensor-prediction", {
        0: "import math\nimport torch\n\ndef look_elsewhere(x, target):\n"
           "    T = x.shape[0]\n"
           "    g = torch.Generator().manual_seed(1)\n"
           "    R, _ = torch.linalg.qr(torch.randn(T, T, generator=g, dtype=torch.float64))   # any rotation\n"
           "    inv = torch.linalg.pinv(x.double())                                            # (d_model, T)\n"
           "    P = torch.zeros(T, T, dtype=torch.float64)\n"
           "    P[range(T), target.tolist()] = 1\n"
           "    return inv @ (50 * P) @ R, inv @ R        # q kᵀ = 50 P R Rᵀ = 50 P\n",
        1: "import torch\npredicted_shared_wins = torch.tensor(5)\n",
        2: "import torch\n\ndef best_shared(x, pairs):\n"
           "    T, m = x.shape[0], pairs.shape[0]\n"
           "    basis = torch.eye(T, dtype=torch.float64)[:, :m]\n"
           "    y = torch.zeros(T, m, dtype=torch.float64)\n"
           "    y[pairs[:, 0]] = 0.5 * basis[:m]\n"
           "    y[pairs[:, 1]] = 0.8 * basis[:m]\n"
           "    return torch.linalg.pinv(x.double()) @ y\n",
    }),
]
