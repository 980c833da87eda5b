"""Exercise 21 (the cost of a long context, QA windows, the best span): wrong answers a learner writes,
honest alternatives. Answer cells: 0 the prediction, 1 qa_windows, 2 best_span, 3 the written answer."""
from . import Honest, Mistake

_W = "def qa_windows(question_ids, context_ids, max_length, stride, cls_id, sep_id):\n"
_S = ("def best_span(start_logits, end_logits, context_starts, context_lengths, question_length,"
      " max_answer_length):\n")


def _loop(C="max_length - len(question_ids) - 3", step="C - stride", head="[cls_id] + question_ids + [sep_id]",
          check="    if C <= stride:\n        raise ValueError('stride too large')\n", end="start + C >= len(context_ids)"):
    return {1: _W + f"    C = {C}\n" + check +
            "    windows, starts, start = [], [], 0\n"
            "    while True:\n"
            f"        windows.append({head} + context_ids[start:start + C] + [sep_id])\n"
            "        starts.append(start)\n"
            f"        if {end}:\n"
            "            return windows, starts\n"
            f"        start += {step}\n"}


def _formula(check):
    """The windows by a formula (no loop that could run forever): only the stride check varies."""
    return {1: "import math\n\n" + _W + "    C = max_length - len(question_ids) - 3\n" + check +
            "    n = 1 + max(0, math.ceil((len(context_ids) - C) / (C - stride)))\n"
            "    starts = [k * (C - stride) for k in range(n)]\n"
            "    return [[cls_id, *question_ids, sep_id, *context_ids[s:s + C], sep_id] for s in starts], starts\n"}


def _span(condition, convert="context_starts[k] + i - first, context_starts[k] + j - first"):
    return {2: _S + "    first = question_length + 2\n    best = None\n"
            "    W, T = start_logits.shape\n"
            "    for k in range(W):\n"
            "        for i in range(T):\n"
            "            for j in range(T):\n"
            f"                if not ({condition}):\n                    continue\n"
            "                s = float(start_logits[k, i] + end_logits[k, j])\n"
            "                if best is None or s > best[0]:\n"
            f"                    best = (s, {convert})\n"
            "    return best[1], best[2]\n"}


def _predict(windows, ids):
    return {0: f"predicted_windows = {windows}\npredicted_forward_ids = {ids}\n"}


_OK = "first <= i <= j < first + context_lengths[k] and j - i < max_answer_length"

MISTAKES = [
    Mistake("21.qa-windows", "stride-as-step", _loop(step="stride if stride else C"), "stride` is the overlap"),
    Mistake("21.qa-windows", "room-forgets-specials", _loop(C="max_length - len(question_ids) - 2",
            check="    if C - 1 <= stride:\n        raise ValueError('stride too large')\n"), "one context token too many"),
    Mistake("21.qa-windows", "one-window-too-many", _loop(end="start >= len(context_ids)"), "one window too many"),
    Mistake("21.qa-windows", "question-only-in-first", {1: _W +
            "    C = max_length - len(question_ids) - 3\n"
            "    if C <= stride:\n        raise ValueError('stride too large')\n"
            "    windows, starts, start = [], [], 0\n"
            "    while True:\n"
            "        head = [cls_id] + (question_ids if not windows else []) + [sep_id]\n"
            "        windows.append(head + context_ids[start:start + C] + [sep_id])\n"
            "        starts.append(start)\n"
            "        if start + C >= len(context_ids):\n            return windows, starts\n"
            "        start += C - stride\n"}, "only the first window has the question"),
    Mistake("21.stride-error", "message-without-stride", _formula(
        "    if C <= stride:\n        raise ValueError('question too long')\n"), "should name `stride`"),
    Mistake("21.stride-error", "no-check-divides-by-zero", _formula(""), "got ZeroDivisionError"),
    Mistake("21.stride-error", "assert-instead-of-raise", _formula("    assert C > stride, 'stride too large'\n"),
            "got AssertionError"),
    Mistake("21.stride-error", "equal-stride-accepted", _formula(
        "    if C < stride:\n        raise ValueError('stride too large')\n"), "expected a ValueError"),
    Mistake("21.qa-windows-hugging-face", "stride-as-step", _loop(step="stride if stride else C"), "overlap"),
    Mistake("21.qa-windows-hugging-face", "room-forgets-specials", _loop(C="max_length - len(question_ids) - 2",
            check="    if C - 1 <= stride:\n        raise ValueError('stride too large')\n"), "three special tokens"),
    Mistake("21.qa-windows-hugging-face", "no-sep-between", _loop(
            C="max_length - len(question_ids) - 2", head="[cls_id] + question_ids",
            check="    if C <= stride:\n        raise ValueError('stride too large')\n"), "[SEP]"),
    Mistake("21.cost-prediction", "no-overlap-windows", _predict(6, 2138), "windows do not overlap"),
    Mistake("21.cost-prediction", "full-last-window", _predict(9, 9 * 384), "full windows of 384"),
    Mistake("21.cost-prediction", "ids-of-the-context", _predict(9, 2000), "repeats the question"),
    Mistake("21.cost-prediction", "stride-as-step", _predict(14, 5351), "stride` is the overlap"),
    Mistake("21.best-span", "anywhere-in-window", _span("i <= j and j - i < max_answer_length"), "[CLS]"),
    Mistake("21.best-span", "end-before-start-allowed", _span(
        "first <= i < first + context_lengths[k] and first <= j < first + context_lengths[k] "
        "and abs(j - i) < max_answer_length"), "end before its start"),
    Mistake("21.best-span", "window-coordinates", _span(_OK, convert="i - first, j - first"), "context_starts"),
    Mistake("21.best-span", "length-off-by-one", _span(
        "first <= i <= j < first + context_lengths[k] and j - i <= max_answer_length"), "max_answer_length + 1"),
    Mistake("21.best-span", "length-one-short", _span(
        "first <= i <= j < first + context_lengths[k] and j - i + 1 < max_answer_length"),
        "exactly max_answer_length tokens"),
]

HONEST = [
    Honest("loops-everywhere", {
        0: "# C = 384 - 20 - 3 = 361 context tokens, a step of 361 - 128 = 233\n"
           "predicted_windows = 9.0\npredicted_forward_ids = 3200\n",
        1: _W + "    C = max_length - len(question_ids) - 3\n"
           "    if stride >= C:\n        raise ValueError(f'stride {stride} >= {C}')\n"
           "    starts = [0]\n"
           "    while starts[-1] + C < len(context_ids):\n        starts.append(starts[-1] + C - stride)\n"
           "    out = []\n"
           "    for s in starts:\n"
           "        w = [cls_id]\n        w.extend(question_ids)\n        w.append(sep_id)\n"
           "        w.extend(context_ids[s:s + C])\n        w.append(sep_id)\n        out.append(w)\n"
           "    return out, starts\n",
        2: _span(_OK)[2]}),
    Honest("tensor-triu", {
        1: "import torch\n\n" + _W + "    room = max_length - len(question_ids) - 3\n"
           "    if room - stride < 1:\n"
           "        raise ValueError('stride must leave the windows room to advance')\n"
           "    ctx = torch.tensor(list(context_ids), dtype=torch.long)\n"
           "    starts = torch.arange(0, max(len(context_ids) - room, 0) + room - stride, room - stride)\n"
           "    starts = starts[(starts == 0) | (starts - (room - stride) + room < len(context_ids))]\n"
           "    head = [cls_id] + list(question_ids) + [sep_id]\n"
           "    windows = [head + ctx[s:s + room].tolist() + [sep_id] for s in starts.tolist()]\n"
           "    return windows, starts.tolist()\n",
        2: "import torch\n\n" + _S + "    first = question_length + 2\n"
           "    W, T = start_logits.shape\n"
           "    best = (-float('inf'), 0, 0)\n"
           "    for k in range(W):\n"
           "        n = int(context_lengths[k])\n"
           "        s = start_logits[k, first:first + n].double()\n"
           "        e = end_logits[k, first:first + n].double()\n"
           "        pair = s[:, None] + e[None, :]\n"
           "        ok = torch.ones(n, n, dtype=torch.bool).triu() & ~torch.ones(n, n, dtype=torch.bool).triu(max_answer_length)\n"
           "        pair = torch.where(ok, pair, torch.full_like(pair, -float('inf')))\n"
           "        i, j = divmod(int(torch.argmax(pair)), n)\n"
           "        if pair[i, j] > best[0]:\n"
           "            best = (float(pair[i, j]), context_starts[k] + i, context_starts[k] + j)\n"
           "    return best[1], best[2]\n"}),
]
