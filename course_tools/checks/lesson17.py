"""Graded checks for lesson 17: BERT's pretraining loss, label-smoothed, written by hand.

The lesson builds BERT's loss with `F.cross_entropy(..., ignore_index)`; the exercise writes the
label-smoothed variant from log-probabilities (PyTorch's definition: the target puts 1 - eps on the
label and eps / V on every class, the label included). Which positions count and what the mean is
over is the lesson's answer, so the task does not spell it out: the checks compute what the usual
wrong reductions give and name the one the learner's number matches. Then the learner predicts the
loss of an untrained BERT-base (a derivation: ln V + ln 2, smoothing or not) and the check measures
it with the learner's own function."""
import math

import torch

from ..grader.authoring import CheckFailed, exercise, expect, expect_scalar, expect_tuple, randint, written

IGNORE = -100
NO_CROSS_ENTROPY = ("torch.nn.functional:cross_entropy", "torch.nn:CrossEntropyLoss",
                    "torch.nn.functional:nll_loss", "torch.nn:NLLLoss",
                    "course_lib.bert:mlm_cross_entropy")


def reference(logits, labels, eps):
    """Label-smoothed cross-entropy, token mean over labels != -100; 0 when none (float64 inside)."""
    selected = labels != IGNORE
    if not selected.any():
        return torch.zeros((), dtype=torch.float64)
    logp = logits[selected].double().log_softmax(-1)                       # (n, V)
    nll = -logp.gather(-1, labels[selected].long().unsqueeze(-1)).squeeze(-1)
    return ((1 - eps) * nll - eps * logp.mean(-1)).mean()


def _other_classes(logits, labels, eps):
    """The other convention: eps spread over the V-1 wrong classes only."""
    selected = labels != IGNORE
    logp = logits[selected].double().log_softmax(-1)
    y = labels[selected].long()
    nll = -logp.gather(-1, y.unsqueeze(-1)).squeeze(-1)
    rest = -(logp.sum(-1) - (-nll))
    return ((1 - eps) * nll + eps / (logp.shape[-1] - 1) * rest).mean()


def _case(rng, B=None, T=None, V=None, scale=3.0, dtype=torch.float32):
    """Random logits and labels (-100 where unselected); rows select different numbers of tokens,
    and one selected label is token 0 (so treating id 0 as "ignored" is caught)."""
    B = B or randint(rng, 2, 7)
    T = T or randint(rng, 5, 24)
    V = V or randint(rng, 5, 300)
    logits = (scale * torch.randn(B, T, V, generator=rng, dtype=torch.float64)).to(dtype)
    targets = torch.randint(0, V, (B, T), generator=rng)
    row_share = torch.rand(B, 1, generator=rng) * 0.6 + 0.05
    selected = torch.rand(B, T, generator=rng) < row_share
    selected[0, :2] = True
    targets[0, min(1, T - 1)] = 0
    labels = torch.where(selected, targets, torch.full_like(targets, IGNORE))
    return logits, labels, selected


def _mlm_variants(logits, labels, selected, eps):
    """What the usual mistakes give on these inputs: {key: value} (float64)."""
    B, T, V = logits.shape
    logp_all = logits.double().log_softmax(-1)                                 # (B, T, V)
    safe = labels.clamp(min=0).long()
    nll_all = -logp_all.gather(-1, safe.unsqueeze(-1)).squeeze(-1)            # (B, T)
    per_all = (1 - eps) * nll_all - eps * logp_all.mean(-1)                   # (B, T)
    expected = reference(logits, labels, eps)
    n = int(selected.sum())
    rows = [r for r in range(B) if selected[r].any()]
    out = {
        "other-classes": _other_classes(logits, labels, eps),
        "unsmoothed": reference(logits, labels, 0.0),
        "per-sentence": torch.stack([reference(logits[r:r + 1], labels[r:r + 1], eps) for r in rows]).mean(),
        "all-positions": per_all.mean(),
        "divide-by-BT": expected * n / (B * T),
        "sum": expected * n,
        "zero-ignored": reference(logits, torch.where(labels == 0, torch.full_like(labels, IGNORE), labels), eps)
        if ((labels == 0) & selected).any() else None,
    }
    if eps > 0:
        logp = logits[selected].double().log_softmax(-1)
        nll = -logp.gather(-1, labels[selected].long().unsqueeze(-1)).squeeze(-1)
        out["uniform-summed"] = ((1 - eps) * nll - eps * logp.sum(-1)).mean()
    return {k: float(v) for k, v in out.items() if v is not None}


MLM_MISTAKES = (
    ("other-classes", "you spread eps over the V-1 other classes; PyTorch's (and this exercise's) label "
                      "smoothing puts eps/V on every class, the label included"),
    ("unsmoothed", "the loss equals the unsmoothed cross-entropy: did you forget the smoothing term?"),
    ("all-positions", "you averaged over every position, the unselected ones scored against token 0: only "
                      "the positions masking selected count (the others carry -100)"),
    ("zero-ignored", "you dropped the selected positions whose label is token 0: -100 marks the unselected "
                     "positions, 0 is a real token id"),
    ("per-sentence", "you averaged per sentence, then over sentences; BERT averages over all selected "
                     "tokens of the batch (a short sentence's tokens count as much as a long one's)"),
    ("divide-by-BT", "you divided by all B*T positions; divide by the number of selected ones"),
    ("sum", "you summed over the selected tokens; BERT's loss is their mean"),
    ("uniform-summed", "the uniform part should be averaged over the V classes (eps/V each), not summed"),
)


def diagnose(failures, mistakes, what):
    """`failures`: [(case, got, expected, {key: value})]. Raise the message of the first mistake that
    gives the learner's number in every failed case (one case alone can fit two), else say what was
    expected."""
    case, got, expected, _ = failures[0]
    for key, message in mistakes:
        if all(key in v and abs(g - v[key]) <= 1e-4 * max(1.0, abs(v[key])) for _, g, _, v in failures):
            raise CheckFailed(f"[{case}] got {got:.5f}, expected {expected:.5f}: {message}")
    raise CheckFailed(f"[{case}] got {got:.5f}, expected {expected:.5f} ({what}); none of the usual "
                      f"mistakes gives your number: work the task's example by hand with your code")


def _expect_empty(case, got, leaf, name):
    got = expect_scalar(case, got, name)
    expect(bool(torch.isfinite(got)), f"[{case}] {name} is {got.item()}; with nothing selected it must "
           f"be 0, not NaN (a mean over zero tokens divides 0 by 0)")
    expect(got.item() == 0.0, f"[{case}] expected {name} = 0.0, got {got.item()}")
    hint = ("return something computed from the logits, e.g. `logits.sum() * 0.0`, so that "
            "backward() reaches them (a training loop calls it on every batch)")
    try:
        got.backward()
    except RuntimeError as error:
        raise CheckFailed(f"[{case}] backward() failed ({error}); the loss must stay connected "
                          f"to the logits: {hint}") from None
    expect(leaf.grad is not None, f"[{case}] the loss is not connected to the logits; {hint}")


def _mlm_cases(rng):
    cases = [dict(V=5, eps=0.3, label="5 classes, smoothing 0.3"),
             dict(eps=0.0, label="smoothing 0: plain cross-entropy"),
             dict(dtype=torch.float64, eps=0.2, label="float64 logits"),
             dict(B=1, T=1, eps=0.1, label="one sequence of one token")]
    for _ in range(4):
        cases.append(dict(eps=float(torch.rand((), generator=rng)) * 0.5, label="random"))
    return cases


@exercise("17.smoothed-mlm-loss", points=3, uses="smoothed_mlm_loss", forbids=NO_CROSS_ENTROPY)
def check_smoothed_mlm_loss(smoothed_mlm_loss, rng):
    """Label-smoothed cross-entropy reduced as BERT's MLM loss is: nothing unselected counts."""
    failures = []
    for number, spec in enumerate(_mlm_cases(rng)):
        eps, label = spec.pop("eps"), spec.pop("label")
        logits, labels, selected = _case(rng, **spec)
        B, T, V = logits.shape
        name = (f"case {number} ({label}): logits {(B, T, V)} {str(logits.dtype)[6:]}, "
                f"{int(selected.sum())} of {B * T} positions selected, smoothing {eps:.3f}")
        leaf = logits.clone().requires_grad_(True)
        got = expect_scalar(name, smoothed_mlm_loss(leaf, labels.clone(), eps), "smoothed_mlm_loss")
        value = float(got.detach().double())
        expected = float(reference(logits, labels, eps))
        if not math.isfinite(value):
            raise CheckFailed(f"[{name}] the loss is {value} (expected {expected:.5f}): a log of 0 or an "
                              f"overflow - compute log-probabilities with log_softmax / logsumexp")
        if abs(value - expected) > 1e-5 * max(1.0, abs(expected)):
            failures.append((name, value, expected, _mlm_variants(logits, labels, selected, eps)))
            continue
        if not got.requires_grad:
            raise CheckFailed(f"[{name}] the loss does not depend on the logits through autograd "
                              f"(no grad_fn); compute it with torch operations")
        got.backward()
        expect(leaf.grad is not None, f"[{name}] no gradient reached the logits")
        leak = leaf.grad[~selected].abs()
        if leak.numel() and leak.max() > 0:
            raise CheckFailed(f"[{name}] unselected positions received a gradient (max {leak.max().item():.2e}); "
                              f"with smoothing, too, they must not count")
        scrambled = logits.clone()
        scrambled[~selected] = 10 * torch.randn(scrambled[~selected].shape, generator=rng).to(logits.dtype)
        again = expect_scalar(name, smoothed_mlm_loss(scrambled, labels.clone(), eps), "smoothed_mlm_loss")
        expect(abs(again.item() - value) < 1e-5 * max(1.0, abs(expected)),
               f"[{name}] changing the logits at unselected positions moved the loss from "
               f"{value:.5f} to {again.item():.5f}: they must not count")
    if failures:
        diagnose(failures, MLM_MISTAKES, "the label-smoothed cross-entropy, reduced as BERT reduces its "
                 "masked-LM loss")


@exercise("17.mlm-loss-empty", points=1, uses="smoothed_mlm_loss", forbids=NO_CROSS_ENTROPY)
def check_mlm_loss_empty(smoothed_mlm_loss, rng):
    """No selected position: a loss of 0 (not NaN), still connected to the logits."""
    for eps in (0.1, 0.0):
        logits, labels, _ = _case(rng)
        labels = torch.full_like(labels, IGNORE)
        leaf = logits.clone().requires_grad_(True)
        _expect_empty(f"nothing selected, smoothing {eps}", smoothed_mlm_loss(leaf, labels, eps), leaf,
                      "smoothed_mlm_loss")


def _nsp_variants(logits, labels, eps):
    """What the usual NSP mistakes give (float64); logits (B, 2), labels (B,) with -100."""
    keep = labels != IGNORE
    logp = logits.double().log_softmax(-1)                                    # (B, 2)
    nll = -logp.gather(-1, labels.clamp(min=0).long().unsqueeze(-1)).squeeze(-1)
    per = (1 - eps) * nll - eps * logp.mean(-1)                               # (B,)
    one = lambda x, y: reference(x.unsqueeze(1), y.unsqueeze(1), eps)          # noqa: E731
    out = {"unsmoothed": reference(logits.unsqueeze(1), labels.unsqueeze(1), 0.0),
           "classes-swapped": one(logits, torch.where(keep, 1 - labels, labels)),
           "summed": per[keep].sum()}
    if not keep.all():
        out["ignored-counted"] = per.mean()
        out["divide-by-B"] = per[keep].sum() / len(labels)
    return {k: float(v) for k, v in out.items()}


NSP_MISTAKES = (
    ("ignored-counted", "examples whose next_sentence_label is -100 were counted (as class 0); they must "
                        "not count"),
    ("divide-by-B", "you divided by all B examples; average over the ones whose label is not -100"),
    ("unsmoothed", "that is the unsmoothed value: smooth the NSP term with the same smoothing"),
    ("classes-swapped", "you swapped the two NSP classes: label 0 means B follows A (Hugging Face's "
                        "next_sentence_label), and logit column 0 is that class"),
    ("summed", "you summed over the examples; the NSP term is their mean"),
)


@exercise("17.pretraining-loss", points=2, uses="pretraining_loss", forbids=NO_CROSS_ENTROPY)
def check_pretraining_loss(pretraining_loss, rng):
    """(total, mlm, nsp): both terms smoothed, NSP ignores -100, total = mlm + nsp."""
    failures, nan_nsp = {"mlm": [], "nsp": []}, None
    for number in range(5):
        eps = (0.2, 0.0, 0.1, 0.15, 0.05)[number]
        logits, labels, selected = _case(rng)
        B = logits.shape[0]
        nsp_logits = 2 * torch.randn(B, 2, generator=rng)
        nsp_labels = torch.randint(0, 2, (B,), generator=rng)
        nsp_labels[-1] = 1 - nsp_labels[0]               # both classes in every batch
        if number in (0, 2, 4):
            nsp_labels[0] = IGNORE                       # an example without a sentence pair
        if number == 3:
            nsp_labels[:] = IGNORE                       # no sentence pair at all
        name = (f"case {number}: logits {tuple(logits.shape)}, next_sentence_label "
                f"{nsp_labels.tolist()}, smoothing {eps}")
        nsp_leaf = nsp_logits.clone().requires_grad_(True)
        out = pretraining_loss(logits.clone().requires_grad_(True), nsp_leaf, labels, nsp_labels, eps)
        parts = expect_tuple(name, out, ("total", "mlm", "nsp"), lists=True)
        total, mlm, nsp = (expect_scalar(name, x, n) for x, n in zip(parts, ("total", "mlm", "nsp")))
        expected = {"mlm": float(reference(logits, labels, eps)),
                    "nsp": float(reference(nsp_logits.unsqueeze(1), nsp_labels.unsqueeze(1), eps))}
        got = {"mlm": float(mlm.detach().double()), "nsp": float(nsp.detach().double())}
        if not math.isfinite(got["nsp"]):
            nan_nsp = nan_nsp or (f"[{name}] nsp is {got['nsp']}, expected {expected['nsp']:.5f}: examples whose "
                                  f"next_sentence_label is -100 must not count" + (
                                      ", and with none left the term is 0, not NaN" if number == 3 else ""))
            continue
        for term, variants in (("mlm", lambda: _mlm_variants(logits, labels, selected, eps)),
                               ("nsp", lambda: _nsp_variants(nsp_logits, nsp_labels, eps))):
            if abs(got[term] - expected[term]) > 1e-5 * max(1.0, abs(expected[term])):
                failures[term].append((f"{name}, term {term}", got[term], expected[term], variants()))
        if failures["mlm"] or failures["nsp"]:
            continue
        total_value, want = float(total.detach().double()), expected["mlm"] + expected["nsp"]
        if abs(total_value - want) > 1e-5 * max(1.0, want):
            if abs(total_value - want / 2) < 1e-5 * max(1.0, want):
                raise CheckFailed(f"[{name}] total is {total_value:.5f} = (mlm + nsp) / 2; BERT adds the two "
                                  f"terms with weight 1 each: {want:.5f}")
            if abs(total_value - expected["mlm"]) < 1e-5 * max(1.0, want) and expected["nsp"] > 1e-3:
                raise CheckFailed(f"[{name}] total is {total_value:.5f}, the MLM term alone: add the NSP term "
                                  f"(weight 1): {want:.5f}")
            raise CheckFailed(f"[{name}] total is {total_value:.5f}, expected mlm + nsp = {want:.5f} (the two "
                              f"terms added with weight 1 each)")
        expect(total.requires_grad, f"[{name}] total has no gradient: training calls total.backward(), "
               f"so do not detach it or convert it to a number")
        if number == 3:
            total.backward()
            expect(nsp_leaf.grad is not None and bool((nsp_leaf.grad == 0).all()),
                   f"[{name}] with no sentence pair the NSP logits must get a zero gradient")
    if failures["nsp"]:
        diagnose(failures["nsp"], NSP_MISTAKES, "the label-smoothed 2-way cross-entropy, averaged over the "
                 "examples whose label is not -100")
    if failures["mlm"]:
        diagnose(failures["mlm"], MLM_MISTAKES, "mlm must be your smoothed_mlm_loss of the logits and labels")
    if nan_nsp:
        raise CheckFailed(nan_nsp)


BERT_BASE_VOCAB = 30522


@exercise("17.initial-loss", points=1, uses=("predicted_initial_loss", "pretraining_loss"))
def check_initial_loss(predicted, pretraining_loss, rng):
    """The predicted loss of an untrained BERT-base, smoothing 0.1 (a derivation), beside the
    measurement with the learner's own pretraining_loss."""
    V = BERT_BASE_VOCAB
    want = math.log(V) + math.log(2)
    if isinstance(predicted, torch.Tensor) and predicted.numel() == 1:
        predicted = predicted.item()
    expect(isinstance(predicted, (int, float)) and not isinstance(predicted, bool) and math.isfinite(predicted),
           f"predicted_initial_loss should be one number (nats), got {predicted!r:.40}")
    # the measurement: near-uniform logits, as an initialisation with std 0.02 gives them
    B, T = 4, 16
    logits = 0.02 * torch.randn(B, T, V, generator=rng)
    labels = torch.full((B, T), IGNORE)
    labels[:, 1:13] = torch.randint(0, V, (B, 12), generator=rng)
    nsp_logits = 0.02 * torch.randn(B, 2, generator=rng)
    nsp_labels = torch.tensor([0, 1, 1, 0])
    try:
        total = pretraining_loss(logits, nsp_logits, labels, nsp_labels, 0.1)[0]
        measured = f"your pretraining_loss on near-uniform logits measures {float(total):.3f}"
    except Exception as error:  # noqa: BLE001 - the learner's code: the note says so
        measured = f"your pretraining_loss raised {type(error).__name__} on near-uniform logits"
    if abs(predicted - want) <= 0.01 * want:
        return f"you predicted {predicted:.3f} nats; {measured} (V = {V:,}, smoothing 0.1)"
    near = lambda x: abs(predicted - x) <= 0.01 * abs(x)  # noqa: E731
    if near(math.log(V)):
        why = ("that is the masked-LM term alone: the total adds a second cross-entropy, the NSP term, "
               "over its own classes")
    elif near(math.log10(V) + math.log10(2)) or near(math.log10(V)):
        why = "that is in decimal logarithms: cross-entropy losses are in nats (natural logarithms)"
    elif near(math.log2(V) + 1) or near(math.log2(V)):
        why = "that is in bits: cross-entropy losses in PyTorch are in nats (natural logarithms)"
    elif near(0.9 * math.log(V) + 0.9 * math.log(2)) or near(0.9 * math.log(V)):
        why = ("label smoothing does not lower the loss of a uniform prediction: every class has the same "
               "log-probability then, whatever the target spreads over them")
    else:
        why = "derive it: what is each term's cross-entropy when the softmax is uniform?"
    raise CheckFailed(f"predicted_initial_loss = {predicted:.4g}: {why}")


written("17.written", points=2, rubric=(
    "the total is the sum, with equal weight 1, of the masked-LM cross-entropy and the NSP cross-entropy "
    "(a 2-way softmax on the pooled [CLS] vector)",
    "the MLM term is a softmax over the whole vocabulary (decoder tied to the word embeddings) averaged over "
    "the ~15% selected positions only - the unchanged and random-replaced ones included - as a token mean "
    "over the batch, not a per-sentence mean",
    "unselected positions carry the label -100 (ignore_index): they add nothing and get exactly zero "
    "gradient; labels copied from input_ids at every position would change the loss (a classic bug)",
    "at initialisation the terms sit near ln V and ln 2 (a free bug check); MLM dominates the sum and "
    "drops first, NSP stays at chance for hundreds of steps",
))
