"""Graded checks for lesson 21 (BERT takes at most 512 tokens: how do you handle longer documents?).

The lesson cuts one document into [CLS] + slice + [SEP] windows and pools their predictions. The
exercise applies sliding windows where the lesson did not go, extractive question answering:

- 21.cost-prediction (predict, then measure): before running anything, how many windows and how many
  ids a question + long context costs; the note shows what the learner's `qa_windows` then produces.
- 21.qa-windows (apply): every window repeats the question and only the context overflows (Hugging
  Face's `truncation="only_second"`, `return_overflowing_tokens=True`), each window remembers where its
  slice starts in the context; hidden random cases, against a reference written here.
- 21.stride-error (conformance): a stride that cannot advance raises a ValueError naming `stride`.
- 21.qa-windows-hugging-face (apply): the same windows as `BertTokenizerFast` on real text.
- 21.best-span (apply): the best answer span over all windows, in context coordinates, with
  deterministic cases at the length limit (a span one token too long is the best one there).
- 21.written: the interview answer, graded by a person.

Wrong answers are diagnosed by recomputing the result with each usual mistake made.
"""
import math
import numbers
import os

import torch

from ..grader.authoring import CheckFailed, call_learner, exercise, expect, expect_tuple, randint, written

os.environ.setdefault("HF_HUB_OFFLINE", "1")

FORBIDS = ("course_lib.long_text:sliding_windows", "course_lib.long_text:window_count",
           "transformers:BertTokenizerFast", "transformers:AutoTokenizer", "tokenizers:Tokenizer",
           "transformers:pipeline", "transformers:QuestionAnsweringPipeline")


# ---------------------------------------------------------------- windows

def reference_windows(question_ids, context_ids, max_length, stride, cls_id, sep_id, *,
                      room=None, step=None, stop_at_end=True, question_everywhere=True, sep_between=True):
    """The windows and their context starts. The keyword arguments make the usual mistakes (for the
    diagnosis): another number of context tokens per window, another step, one window too many, the
    question in the first window only, no [SEP] between question and context."""
    C = max_length - len(question_ids) - 3 if room is None else room
    step = C - stride if step is None else step
    if C <= stride or step <= 0 or C <= 0:
        raise ValueError("stride too large")
    windows, starts, start = [], [], 0
    while True:
        question = list(question_ids) if question_everywhere or not windows else []
        head = [cls_id, *question] + ([sep_id] if sep_between else [])
        windows.append(head + list(context_ids[start:start + C]) + [sep_id])
        starts.append(start)
        if (start + C >= len(context_ids)) if stop_at_end else (start >= len(context_ids)):
            return windows, starts
        start += step
        if len(windows) > 10_000:
            raise ValueError("no end")


def _mistaken_windows(question, context, max_length, stride, cls_id, sep_id):
    """(windows, what it looks like) for each usual mistake that applies to this case."""
    n_q, C = len(question), max_length - len(question) - 3
    variants = [
        (dict(step=stride), "the step between windows is `stride` tokens: in Hugging Face's windows `stride` "
                            "is the overlap, the number of context tokens a window shares with the next"),
        (dict(step=C), "the windows do not overlap: `stride` is the number of context tokens a window shares "
                       "with the next"),
        (dict(room=C + 1), "each window holds one context token too many: [CLS], the question and two [SEP]s "
                           "(three special tokens) share max_length with the context"),
        (dict(room=max_length - 2), "the context slice leaves no room for the question: max_length counts "
                                    "[CLS] + question + [SEP] + context + [SEP]"),
        (dict(room=C - 1), "each window holds one context token too few: only three special tokens share "
                           "max_length with the question and the context"),
        (dict(stop_at_end=False), "one window too many: stop after the first window that reaches the end "
                                  "of the context"),
        (dict(question_everywhere=False), "only the first window has the question: every window must repeat "
                                          "it (the model answers from one window at a time)"),
        (dict(room=C + 1, sep_between=False), "there is no [SEP] between the question and the context"),
    ]
    out = []
    for kwargs, why in variants:
        try:
            out.append((reference_windows(question, context, max_length, stride, cls_id, sep_id, **kwargs), why))
        except ValueError:
            continue
    return out


def _ints(case, values, what):
    if isinstance(values, torch.Tensor):
        values = values.tolist()
    if not isinstance(values, (list, tuple)) or not all(isinstance(t, numbers.Integral) and not isinstance(t, bool)
                                                         for t in values):
        raise CheckFailed(f"[{case}] {what} should be a list of ints, got {values!r:.80}")
    return [int(t) for t in values]


def _compare(case, got, expected, question, context, max_length, stride, cls_id, sep_id):
    windows, starts = expect_tuple(case, got, ("windows", "context_starts"), lists=True)
    if not isinstance(windows, (list, tuple)):
        raise CheckFailed(f"[{case}] windows should be a list of lists of ints")
    windows = [_ints(case, w, f"window {k}") for k, w in enumerate(windows)]
    starts = _ints(case, starts, "context_starts")
    e_windows, e_starts = expected
    if windows == e_windows and starts == e_starts:
        return
    if windows != e_windows:
        for variant, why in _mistaken_windows(question, context, max_length, stride, cls_id, sep_id):
            if windows == variant[0] and variant[0] != e_windows:
                raise CheckFailed(f"[{case}] {len(windows)} windows, expected {len(e_windows)} (or other "
                                  f"contents); this matches a known mistake: {why}")
        n_q = len(question)
        for k, (g, e) in enumerate(zip(windows, e_windows)):
            if g != e:
                if len(g) > max_length:
                    hint = f" - {len(g)} ids, more than max_length = {max_length}"
                elif g[:n_q + 2] != e[:n_q + 2]:
                    hint = " - every window starts with [CLS] + the question + [SEP]"
                elif g[-1:] != e[-1:]:
                    hint = " - every window ends with [SEP]"
                else:
                    hint = f" - its context slice should start at context token {e_starts[k]}"
                raise CheckFailed(f"[{case}] window {k} differs{hint}: got ...{g[n_q + 1:n_q + 7]}...{g[-3:]} "
                                  f"({len(g)} ids), expected ...{e[n_q + 1:n_q + 7]}...{e[-3:]} ({len(e)} ids)")
        raise CheckFailed(f"[{case}] {len(windows)} windows, expected {len(e_windows)}")
    raise CheckFailed(f"[{case}] context_starts {starts[:8]}, expected {e_starts[:8]} (the index in "
                      f"context_ids of each window's first context token)")


def _random_case(rng, case):
    n_q = randint(rng, 0, 13)
    max_length = n_q + 3 + randint(rng, 1, 41)
    C = max_length - n_q - 3
    stride = randint(rng, 0, C)
    kind = case % 4
    n = {0: randint(rng, 0, 6 * C + 1), 1: C + randint(rng, -1, 2),
         2: C + (C - stride) * randint(rng, 1, 5) + randint(rng, 0, 2), 3: randint(rng, 0, 3)}[kind]
    question = torch.randint(5, 30000, (n_q,), generator=rng).tolist()
    context = torch.randint(5, 30000, (max(n, 0),), generator=rng).tolist()
    return question, context, max_length, stride, randint(rng, 100, 111), randint(rng, 111, 121)


@exercise("21.qa-windows", points=3, uses="qa_windows", forbids=FORBIDS)
def check_qa_windows(fn, rng):
    """Windows and context starts equal the reference on hidden random questions, contexts, sizes and
    strides (empty and one-window contexts, contexts ending on a window boundary)."""
    fixed = [([7, 8], list(range(20, 30)), 9, 1, 101, 102),          # the worked example
             ([5, 6, 7], list(range(40, 52)), 12, 0, 101, 102),      # stride 0: windows side by side
             ([5], list(range(40, 60)), 10, 3, 101, 102)]            # windows share 3 context tokens
    cases = fixed + [_random_case(rng, case) for case in range(40)]
    for case, (question, context, max_length, stride, cls_id, sep_id) in enumerate(cases):
        name = (f"case {case}: question of {len(question)} ids, context of {len(context)}, "
                f"max_length={max_length}, stride={stride}")
        q0, c0 = list(question), list(context)
        got = call_learner(name, fn, question, context, max_length, stride, cls_id, sep_id)
        expect(question == q0 and context == c0, f"[{name}] question_ids or context_ids was modified")
        _compare(name, got, reference_windows(question, context, max_length, stride, cls_id, sep_id),
                 question, context, max_length, stride, cls_id, sep_id)


@exercise("21.stride-error", points=1, uses="qa_windows", forbids=FORBIDS)
def check_stride_error(fn, rng):
    """A stride the windows cannot advance by raises a ValueError that names `stride`."""
    for case in range(3):
        n_q = randint(rng, 2, 11)
        max_length = n_q + 3 + randint(rng, 1, 11)
        stride = max_length - n_q - 3 + case            # equal to the room, or beyond it
        name = f"bad stride {case}: question of {n_q} ids, max_length={max_length}, stride={stride}"
        try:
            fn(list(range(5, 5 + n_q)), list(range(100)), max_length, stride, 101, 102)
        except ValueError as error:
            expect("stride" in str(error), f"[{name}] the ValueError should name `stride`; got {error!r}")
        except NotImplementedError:
            raise
        except Exception as error:  # noqa: BLE001 - the learner's code
            raise CheckFailed(f"[{name}] expected a ValueError naming `stride`, got {type(error).__name__}: "
                              f"{error}") from None
        else:
            raise CheckFailed(f"[{name}] expected a ValueError: with this question and max_length the windows "
                              f"cannot advance (they would share every context token)")


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
        cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
        got = call_learner(name, fn, q_ids, c_ids, max_length, stride, cls_id, sep_id)
        starts = reference_windows(q_ids, c_ids, max_length, stride, cls_id, sep_id)[1]
        _compare(name, got, (expected, starts), q_ids, c_ids, max_length, stride, cls_id, sep_id)


# ---------------------------------------------------------------- the cost, predicted

PREDICT = dict(question=20, context=2000, max_length=384, stride=128)   # the task's setting


def _cost(question, context, max_length, stride):
    windows, _ = reference_windows([7] * question, list(range(1000, 1000 + context)), max_length, stride, 101, 102)
    return len(windows), sum(map(len, windows))


@exercise("21.cost-prediction", points=1, uses=("predicted_windows", "predicted_forward_ids", "qa_windows"),
          forbids=FORBIDS)
def check_cost_prediction(windows, ids, fn, rng):
    """The predicted number of windows (exact) and of ids fed to BERT (within 2%) for a 20-token question
    and a 2,000-token context, max_length 384, stride 128."""
    for value, name in ((windows, "predicted_windows"), (ids, "predicted_forward_ids")):
        if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise CheckFailed(f"write your prediction as a number: {name} = ...")
    n_windows, n_ids = _cost(**PREDICT)
    q, n, L, S = PREDICT["question"], PREDICT["context"], PREDICT["max_length"], PREDICT["stride"]
    variants = _mistaken_windows([7] * q, list(range(1000, 1000 + n)), L, S, 101, 102)
    if round(windows) != n_windows:
        matches = {why for (w, _), why in variants if len(w) == round(windows) != n_windows}
        why = (f"it matches this mistake: {matches.pop()}" if len(matches) == 1 else
               "count how many context tokens fit in a window beside the question, by how many tokens the next "
               "window moves on, and when the last window reaches the end")
        raise CheckFailed(f"you predicted {windows:g} windows, not the count of this setting; {why}")
    if abs(ids - n_ids) > 0.02 * n_ids:
        full = n_windows * L
        if abs(ids - full) <= 0.005 * full:
            raise CheckFailed(f"you predicted {ids:g} ids, i.e. {n_windows} full windows of {L}: the last window "
                              "holds only what is left of the context (no padding is counted)")
        if abs(ids - n) <= 0.02 * n:
            raise CheckFailed(f"you predicted {ids:g} ids, about the context itself: every window repeats the "
                              "question and its special tokens, and neighbours read `stride` tokens twice")
        raise CheckFailed(f"you predicted {ids:g} ids: not within 2% of this setting's total; add up each window's "
                          "question, special tokens and context slice")
    measured = ""
    try:
        got = fn([7] * q, list(range(1000, 1000 + n)), L, S, 101, 102)
        measured = (f"; your qa_windows gives {len(got[0])} windows and {sum(map(len, got[0]))} ids, "
                    f"{sum(map(len, got[0])) / n:.2f}x the context's {n} tokens")
    except Exception:  # noqa: BLE001 - the measurement is graded by 21.qa-windows
        pass
    return f"you predicted {windows:g} windows and {ids:g} ids{measured}"


# ---------------------------------------------------------------- the best span

def reference_span(start_logits, end_logits, context_starts, context_lengths, question_length, max_answer_length, *,
                   longest=None, shortest=0, ordered=True, context_only=True, shift=True, windows=None):
    """(start, end) in context coordinates and its score. The keyword arguments make the usual
    mistakes: a different length limit, end before start allowed, positions outside the context
    allowed, window coordinates (no shift by the window's context start), only some windows."""
    longest = max_answer_length if longest is None else longest
    best, where = -float("inf"), None
    offset = question_length + 2
    W, T = start_logits.shape
    for k in range(W) if windows is None else windows:
        first, last = (offset, offset + int(context_lengths[k])) if context_only else (0, T)
        for a in range(first, last):
            for b in range(first, last):
                length = (b - a + 1) if ordered else abs(b - a) + 1
                if (ordered and b < a) or length > longest or length <= shortest:
                    continue
                score = float(start_logits[k, a]) + float(end_logits[k, b])
                if score > best:
                    base = int(context_starts[k]) - offset if shift else -offset
                    best, where = score, (base + a, base + b)
    return where, best


SPAN_MISTAKES = (
    (dict(longest_plus=1), "a span of max_answer_length + 1 tokens won: a span from i to j has j - i + 1 tokens"),
    (dict(longest_plus=-1), "the best span has exactly max_answer_length tokens, which is allowed: a span from i "
                            "to j has j - i + 1 tokens"),
    (dict(ordered=False), "an end before its start was allowed"),
    (dict(context_only=False), "the span may sit on [CLS], the question, a [SEP] or padding: both ends must lie in "
                               "the window's context part"),
    (dict(shift=False), "the positions were not converted with the window's context start (context_starts[k])"),
    (dict(windows=[0]), "only the first window was searched: the answer is the best span over all windows"),
)


def _span_variants(args, max_answer_length):
    out = []
    for kwargs, why in SPAN_MISTAKES:
        kwargs = dict(kwargs)
        if "longest_plus" in kwargs:
            kwargs["longest"] = max_answer_length + kwargs.pop("longest_plus")
        out.append((reference_span(*args, **kwargs)[0], why))
    return out


def _span_case(rng, n_q, max_length, stride, context_n, max_answer_length, trap):
    """Windows over a context, random scores, and traps on [CLS], the question, [SEP] and padding."""
    windows, starts = reference_windows(list(range(n_q)), list(range(context_n)), max_length, stride, 1, 2)
    lengths = [len(w) - n_q - 3 for w in windows]
    W, T = len(windows), max_length
    start_logits = torch.randn(W, T, generator=rng)
    end_logits = torch.randn(W, T, generator=rng)
    start_logits[:, 0] += 20                            # [CLS]
    end_logits[:, 0] += 20
    start_logits[:, 1:n_q + 1] += 10                    # the question
    for k, n in enumerate(lengths):
        end_logits[k, n_q + 2 + n:] += 15               # [SEP] and padding after the context
    first = n_q + 2
    if trap in ("too-long", "at-limit"):
        # in the last window, a span of max_answer_length + 1 tokens (too long) or of exactly
        # max_answer_length tokens (allowed) scores far above every other valid span
        k = W - 1
        n = lengths[k]
        a = first + randint(rng, 0, n - max_answer_length - (trap == "too-long") + 1)
        b = a + max_answer_length - (trap == "at-limit")
        start_logits[k, a] += 12
        end_logits[k, b] += 12
    if trap == "reversed":
        # an end d tokens before its start (d < max_answer_length) scores far above every forward span
        k = W - 1
        d = randint(rng, 1, max_answer_length)
        b = first + randint(rng, 0, lengths[k] - d)
        start_logits[k, b + d] += 12
        end_logits[k, b] += 12
    return start_logits, end_logits, starts, lengths


@exercise("21.best-span", points=2, uses="best_span")
def check_best_span(fn, rng):
    """The best (start, end) over all windows, in context coordinates: start <= end, at most
    max_answer_length tokens, inside the context part of a window; spans of exactly max_answer_length
    and max_answer_length + 1 tokens are tested at every run."""
    traps = ["too-long", "at-limit", "too-long", "at-limit", "reversed", "plain", "reversed", "plain",
             "too-long", "plain", "at-limit", "plain"]
    for case, trap in enumerate(traps):
        n_q = randint(rng, 1, 7)
        max_answer_length = randint(rng, 1 + (trap in ("reversed", "at-limit")), 6) if trap != "plain" else randint(rng, 1, 8)
        C = max_answer_length + 2 + randint(rng, 0, 10)          # room for a span one token too long
        max_length = n_q + 3 + C
        stride = randint(rng, 0, C)
        context_n = randint(rng, C, 5 * C + 1) if trap != "plain" else randint(rng, 1, 5 * C + 1)
        if trap != "plain":
            # the last window must hold a full slice, so that the trap's span fits in it
            step = C - stride
            context_n = C + step * max(0, math.ceil((context_n - C) / step))
        start_logits, end_logits, starts, lengths = _span_case(rng, n_q, max_length, stride, context_n,
                                                               max_answer_length, trap)
        args = (start_logits, end_logits, starts, lengths, n_q, max_answer_length)
        expected, score = reference_span(*args)
        name = (f"case {case}: {len(starts)} windows of max_length {max_length}, question of {n_q} ids, "
                f"context_starts {starts[:6]}, context_lengths {lengths[:6]}, max_answer_length {max_answer_length}")
        got = call_learner(name, fn, start_logits.clone(), end_logits.clone(), list(starts), list(lengths), n_q,
                           max_answer_length)
        if not (isinstance(got, (tuple, list)) and len(got) == 2 and all(
                isinstance(v, (numbers.Integral, torch.Tensor)) and not isinstance(v, bool) for v in got)):
            raise CheckFailed(f"[{name}] return (start, end) in context coordinates, got {got!r:.60}")
        got = tuple(int(v) for v in got)
        if got == expected:
            continue
        why = next((why for variant, why in _span_variants(args, max_answer_length)
                    if variant == got and variant != expected), "")
        if not why:
            a, b = got
            if b < a:
                why = "the end comes before the start"
            elif b - a + 1 > max_answer_length:
                why = f"longer than max_answer_length = {max_answer_length}"
            elif not (0 <= a < context_n and 0 <= b < context_n):
                why = "outside the context"
        raise CheckFailed(f"[{name}] got span {got}, expected {expected} (score {score:.3f})"
                          + (f": this looks like a known mistake - {why}" if why else ""))


written("21.written", points=2, rubric=(
    "Truncate or split: truncation keeps one window (head, tail or head+tail, e.g. Sun et al.'s first 128 + "
    "last 382 tokens) and is blind to what it cuts - which one wins depends on where the evidence sits",
    "Sliding windows with a stride (overlap) read every token; the windows' predictions are pooled (mean or max "
    "of logits for classification; for QA the best span over all windows, the question repeated in each window)",
    "The overlap keeps evidence that a window boundary would cut in two whole in some window; pooling choice "
    "matters (max when one window decides, mean when evidence is spread)",
    "The cost: windows cost a measured multiple of one window's forward tokens and FLOPs (about 8x in the lesson), "
    "growing with document length and overlap; alternatives move the limit instead (Longformer, BigBird, "
    "hierarchical models)",
))
