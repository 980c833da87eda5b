"""Graded checks for lesson 21: question-answering windows over a long context, and the best
answer span across the windows.

The lesson cuts one document into [CLS] + slice + [SEP] windows. Extractive QA (SQuAD-style) needs
more: every window repeats the question, only the context overflows (Hugging Face's
`truncation="only_second"` with `return_overflowing_tokens=True`), each window remembers where its
slice starts in the context, and the answer is the best span over all the windows, in context
coordinates. The references are written here, independently of course_lib.
"""
import os

import torch

from ..grading import CheckFailed, exercise, expect, expect_tuple, randint

os.environ.setdefault("HF_HUB_OFFLINE", "1")

FORBIDS = ("course_lib.long_text:sliding_windows", "course_lib.long_text:window_count",
           "transformers:BertTokenizerFast", "transformers:AutoTokenizer", "tokenizers:Tokenizer",
           "transformers:pipeline", "transformers:QuestionAnsweringPipeline")


def reference_windows(question_ids, context_ids, max_length, stride, cls_id, sep_id):
    C = max_length - len(question_ids) - 3
    if C <= stride:
        raise ValueError("stride too large")
    windows, starts, start = [], [], 0
    while True:
        windows.append([cls_id, *question_ids, sep_id, *context_ids[start:start + C], sep_id])
        starts.append(start)
        if start + C >= len(context_ids):
            return windows, starts
        start += C - stride


def reference_span(start_logits, end_logits, context_starts, context_lengths, question_length,
                   max_answer_length):
    best, where = -float("inf"), None
    offset = question_length + 2
    for k in range(start_logits.shape[0]):
        for a in range(int(context_lengths[k])):
            for b in range(a, min(a + max_answer_length, int(context_lengths[k]))):
                score = float(start_logits[k, offset + a]) + float(end_logits[k, offset + b])
                if score > best:
                    best, where = score, (int(context_starts[k]) + a, int(context_starts[k]) + b)
    return where, best


def _ints(case, values, what):
    if isinstance(values, torch.Tensor):
        values = values.tolist()
    if not isinstance(values, (list, tuple)) or not all(isinstance(t, int) and not isinstance(t, bool)
                                                         for t in values):
        raise CheckFailed(f"[{case}] {what} should be a list of ints, got {values!r:.80}")
    return list(values)


def _compare(case, got, expected, n_question, max_length, stride):
    windows, starts = expect_tuple(case, got, ("windows", "context_starts"), lists=True)
    if not isinstance(windows, (list, tuple)):
        raise CheckFailed(f"[{case}] windows should be a list of lists of ints")
    windows = [_ints(case, w, f"window {k}") for k, w in enumerate(windows)]
    starts = _ints(case, starts, "context_starts")
    e_windows, e_starts = expected
    C = max_length - n_question - 3
    for k, (g, e) in enumerate(zip(windows, e_windows)):
        if g != e:
            if g[:n_question + 2] != e[:n_question + 2]:
                hint = " (every window starts with [CLS] + the question + [SEP])"
            elif len(g) > max_length:
                hint = (f" (at most max_length = {max_length} ids: C = max_length - len(question) - 3 = {C} context "
                        f"tokens, the question and three special tokens share max_length)")
            elif g[-1:] != e[-1:]:
                hint = " (every window ends with [SEP])"
            else:
                hint = (f" (its context slice should start at {e_starts[k]} = {k} * (C - stride) = "
                        f"{k} * {C - stride}; stride is the overlap, not the step)")
            raise CheckFailed(f"[{case}] window {k} differs{hint}: got ...{g[n_question + 1:n_question + 7]}..."
                              f"{g[-3:]} ({len(g)} ids), expected ...{e[n_question + 1:n_question + 7]}..."
                              f"{e[-3:]} ({len(e)} ids)")
    if len(windows) != len(e_windows):
        hint = ""
        if len(windows) == len(e_windows) + 1:
            hint = " - one too many: stop after the first window that reaches the end of the context"
        elif len(windows) > len(e_windows):
            hint = (f" - each window holds C = max_length - len(question) - 3 = {C} context tokens "
                    f"(the question and three special tokens share max_length), and the step is C - stride")
        else:
            hint = f" - the step between window starts is C - stride = {C - stride}; stride is the overlap"
        raise CheckFailed(f"[{case}] {len(windows)} windows, expected {len(e_windows)}{hint}")
    if starts != e_starts:
        raise CheckFailed(f"[{case}] context_starts {starts[:8]}, expected {e_starts[:8]} (the index in "
                          f"context_ids of each window's first context token)")


@exercise("21.qa-windows", points=3, uses="qa_windows", forbids=FORBIDS)
def check_qa_windows(fn, rng):
    """Windows and context starts equal the reference on hidden random questions, contexts,
    sizes and strides; a stride that cannot advance raises ValueError naming stride."""
    for case in range(40):
        n_q = randint(rng, 0, 13)
        max_length = n_q + 3 + randint(rng, 1, 41)
        C = max_length - n_q - 3
        stride = randint(rng, 0, C)
        kind = case % 4
        n = {0: randint(rng, 0, 6 * C + 1), 1: C + randint(rng, -1, 2),
             2: C + (C - stride) * randint(rng, 1, 5) + randint(rng, 0, 2), 3: randint(rng, 0, 3)}[kind]
        question = torch.randint(5, 30000, (n_q,), generator=rng).tolist()
        context = torch.randint(5, 30000, (max(n, 0),), generator=rng).tolist()
        cls_id, sep_id = randint(rng, 100, 111), randint(rng, 111, 121)
        name = (f"case {case}: question of {n_q} ids, context of {len(context)}, max_length={max_length}, "
                f"stride={stride}")
        q0, c0 = list(question), list(context)
        got = fn(question, context, max_length, stride, cls_id, sep_id)
        expect(question == q0 and context == c0, f"[{name}] question_ids or context_ids was modified")
        _compare(name, got, reference_windows(question, context, max_length, stride, cls_id, sep_id),
                 n_q, max_length, stride)
    for case in range(2):
        n_q = randint(rng, 2, 11)
        max_length = n_q + 3 + randint(rng, 1, 11)
        stride = max_length - n_q - 3 + case
        name = f"bad stride {case}: question of {n_q} ids, max_length={max_length}, stride={stride}"
        try:
            got = fn(list(range(5, 5 + n_q)), list(range(100)), max_length, stride, 101, 102)
        except ValueError as error:
            expect("stride" in str(error), f"[{name}] the ValueError should name `stride`; got {error!r}")
        else:
            raise CheckFailed(f"[{name}] expected a ValueError: C = max_length - len(question) - 3 = "
                              f"{max_length - n_q - 3} <= stride, the windows cannot advance")


@exercise("21.qa-windows-hugging-face", points=2, uses="qa_windows", forbids=FORBIDS)
def check_hugging_face(fn, rng):
    """Equal to BertTokenizerFast(question, context, truncation="only_second",
    return_overflowing_tokens=True, stride=...) on real text."""
    from transformers import BertTokenizerFast

    from course_lib.data.corpus import pydoc_texts
    from course_lib.pretrained import minilm_path

    tokenizer = BertTokenizerFast.from_pretrained(str(minilm_path()))
    docs = pydoc_texts()
    for case in range(6):
        doc = docs[randint(rng, 0, len(docs))]
        start = randint(rng, 0, max(0, len(doc) - 2000) + 1)
        context = doc[start:start + randint(rng, 300, 2001)]
        words = doc[randint(rng, 0, max(0, len(doc) - 200) + 1):][:200].split()
        question = " ".join(words[:randint(rng, 3, 13)]) + "?"
        max_length = [32, 64, 128, 48, 100, 384][case]
        q_ids = tokenizer(question, add_special_tokens=False)["input_ids"]
        c_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
        max_length = max(max_length, len(q_ids) + 8)   # a long question still leaves room for context
        stride = randint(rng, 0, max_length - len(q_ids) - 3)
        expected = tokenizer(question, context, truncation="only_second", max_length=max_length,
                             stride=stride, return_overflowing_tokens=True)["input_ids"]
        name = (f"case {case}: a {len(q_ids)}-token question, a {len(c_ids)}-token context of Python's "
                f"docs, max_length={max_length}, stride={stride} (BertTokenizerFast, only_second)")
        got = fn(q_ids, c_ids, max_length, stride, tokenizer.cls_token_id, tokenizer.sep_token_id)
        starts = reference_windows(q_ids, c_ids, max_length, stride, tokenizer.cls_token_id,
                                   tokenizer.sep_token_id)[1]
        _compare(name, got, (expected, starts), len(q_ids), max_length, stride)


@exercise("21.best-span", points=2, uses="best_span")
def check_best_span(fn, rng):
    """The best (start, end) over all windows, in context coordinates: start <= end, at most
    max_answer_length tokens, inside the context part of a window."""
    for case in range(10):
        n_q = randint(rng, 1, 7)
        max_length = n_q + 3 + randint(rng, 3, 13)
        C = max_length - n_q - 3
        stride = randint(rng, 0, C)
        context = list(range(randint(rng, 1, 5 * C + 1)))
        windows, starts = reference_windows(list(range(n_q)), context, max_length, stride, 1, 2)
        lengths = [len(w) - n_q - 3 for w in windows]
        W, T = len(windows), max_length
        start_logits = torch.randn(W, T, generator=rng)
        end_logits = torch.randn(W, T, generator=rng)
        # traps: the best raw scores sit on [CLS], on the question and on padding, and the best
        # unconstrained pair has end < start
        start_logits[:, 0] += 20
        end_logits[:, 0] += 20
        start_logits[:, 1:n_q + 1] += 10
        for k, n in enumerate(lengths):
            end_logits[k, n_q + 2 + n:] += 15          # [SEP] and padding after the context
        if case % 2 and C > 2:
            start_logits[0, n_q + 2 + min(lengths[0], C) - 1] += 6
            end_logits[0, n_q + 2] += 6
        max_answer_length = randint(rng, 1, 7) if case != 3 else 1
        expected, score = reference_span(start_logits, end_logits, starts, lengths, n_q, max_answer_length)
        name = (f"case {case}: {W} windows of max_length {max_length}, question of {n_q} ids, "
                f"context_starts {starts[:6]}, context_lengths {lengths[:6]}, max_answer_length {max_answer_length}")
        got = fn(start_logits.clone(), end_logits.clone(), list(starts), list(lengths), n_q, max_answer_length)
        if not (isinstance(got, (tuple, list)) and len(got) == 2):
            raise CheckFailed(f"[{name}] return (start, end) in context coordinates, got {got!r:.60}")
        got = tuple(int(v) for v in got)
        if got != expected:
            a, b = got
            hint = ""
            if b < a:
                hint = " - the end comes before the start"
            elif b - a + 1 > max_answer_length:
                hint = f" - longer than max_answer_length = {max_answer_length}"
            elif not (0 <= a < len(context) and 0 <= b < len(context)):
                hint = (" - outside the context: a span on [CLS], the question, [SEP] or padding, or positions "
                        "not shifted by the window's context start?")
            else:
                hint = (" - a span on [CLS], the question, [SEP] or padding, or positions not converted "
                        "with context_starts?")
            raise CheckFailed(f"[{name}] got span {got}, expected {expected} (score {score:.3f}){hint}")
