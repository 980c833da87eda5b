"""Exercise 21 (QA windows and best span): wrong answers a learner writes, honest alternatives."""
from . import Honest, Mistake

_W = "def qa_windows(question_ids, context_ids, max_length, stride, cls_id, sep_id):\n"
_S = ("def best_span(start_logits, end_logits, context_starts, context_lengths, question_length,"
      " max_answer_length):\n")


def _loop(C="max_length - len(question_ids) - 3", step="C - stride", head="[cls_id] + question_ids + [sep_id]",
          check="    if C <= stride:\n        raise ValueError('stride too large')\n", end="start + C >= len(context_ids)"):
    return {0: _W + f"    C = {C}\n" + check +
            "    windows, starts, start = [], [], 0\n"
            "    while True:\n"
            f"        windows.append({head} + context_ids[start:start + C] + [sep_id])\n"
            "        starts.append(start)\n"
            f"        if {end}:\n"
            "            return windows, starts\n"
            f"        start += {step}\n"}


def _span(condition, convert="context_starts[k] + i - first, context_starts[k] + j - first"):
    return {1: _S + "    first = question_length + 2\n    best = None\n"
            "    W, T = start_logits.shape\n"
            "    for k in range(W):\n"
            "        for i in range(T):\n"
            "            for j in range(T):\n"
            f"                if not ({condition}):\n                    continue\n"
            "                s = float(start_logits[k, i] + end_logits[k, j])\n"
            "                if best is None or s > best[0]:\n"
            f"                    best = (s, {convert})\n"
            "    return best[1], best[2]\n"}


_OK = ("first <= i <= j < first + context_lengths[k] and j - i < max_answer_length")

MISTAKES = [
    Mistake("21.qa-windows", "stride-as-step", _loop(step="stride if stride else C"), "stride is the overlap"),
    Mistake("21.qa-windows", "room-forgets-specials", _loop(C="max_length - len(question_ids) - 2",
            check="    if C - 1 <= stride:\n        raise ValueError('stride too large')\n"), "three special tokens"),
    Mistake("21.qa-windows", "one-window-too-many", _loop(end="start >= len(context_ids)"), "one too many"),
    Mistake("21.qa-windows", "no-stride-check", _loop(check="    if C <= stride:\n        raise ValueError('question too long')\n"), "should name `stride`"),
    Mistake("21.qa-windows", "question-only-in-first", {0: _W +
            "    C = max_length - len(question_ids) - 3\n"
            "    if C <= stride:\n        raise ValueError('stride too large')\n"
            "    windows, starts, start = [], [], 0\n"
            "    while True:\n"
            "        head = [cls_id] + (question_ids if not windows else []) + [sep_id]\n"
            "        windows.append(head + context_ids[start:start + C] + [sep_id])\n"
            "        starts.append(start)\n"
            "        if start + C >= len(context_ids):\n            return windows, starts\n"
            "        start += C - stride\n"}, "the question"),
    Mistake("21.qa-windows-hugging-face", "stride-as-step", _loop(step="stride if stride else C"), "overlap"),
    Mistake("21.qa-windows-hugging-face", "room-forgets-specials", _loop(C="max_length - len(question_ids) - 2",
            check="    if C - 1 <= stride:\n        raise ValueError('stride too large')\n"), "three special tokens"),
    Mistake("21.qa-windows-hugging-face", "no-sep-between", _loop(
            C="max_length - len(question_ids) - 2", head="[cls_id] + question_ids",
            check="    if C <= stride:\n        raise ValueError('stride too large')\n"), "[SEP]"),
    Mistake("21.best-span", "anywhere-in-window", _span("i <= j and j - i < max_answer_length"), "[CLS]"),
    Mistake("21.best-span", "end-before-start-allowed", _span(
        "first <= i < first + context_lengths[k] and first <= j < first + context_lengths[k] "
        "and abs(j - i) < max_answer_length"), "expected"),
    Mistake("21.best-span", "window-coordinates", _span(_OK, convert="i - first, j - first"), "context_starts"),
    Mistake("21.best-span", "length-off-by-one", _span(
        "first <= i <= j < first + context_lengths[k] and j - i <= max_answer_length"), "max_answer_length"),
]

HONEST = [
    Honest("loops-everywhere", {
        0: _W + "    C = max_length - len(question_ids) - 3\n"
           "    if stride >= C:\n        raise ValueError(f'stride {stride} >= {C}')\n"
           "    starts = [0]\n"
           "    while starts[-1] + C < len(context_ids):\n        starts.append(starts[-1] + C - stride)\n"
           "    out = []\n"
           "    for s in starts:\n"
           "        w = [cls_id]\n        w.extend(question_ids)\n        w.append(sep_id)\n"
           "        w.extend(context_ids[s:s + C])\n        w.append(sep_id)\n        out.append(w)\n"
           "    return out, starts\n",
        1: _span(_OK)[1]}),
    Honest("tensor-triu", {
        1: "import torch\n\n" + _S + "    first = question_length + 2\n"
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
