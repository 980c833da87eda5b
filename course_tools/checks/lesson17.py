"""Graded checks for lesson 17: the pretraining loss with label smoothing, written by hand.

The lesson builds BERT's loss with `F.cross_entropy(..., ignore_index)`; the exercise writes the
label-smoothed variant from log-probabilities (PyTorch's definition: the target puts 1 - eps on the
label and eps / V on every class, the label included), over the selected positions only, and an
NSP term whose label may be -100 (an example without a sentence pair)."""
import torch

from ..grading import CheckFailed, exercise, expect, expect_close, expect_scalar, expect_tuple, randint

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


def _diagnose(name, value, logits, labels, selected, eps, expected):
    """Name the classic mistakes before the generic 'differs' message."""
    B, T, V = logits.shape
    if not torch.isfinite(value):
        raise CheckFailed(f"[{name}] the loss is {value.item()} (expected {expected.item():.4f}): "
                          f"exp() of large logits overflows; subtract the row maximum or use "
                          f"log_softmax / logsumexp")
    close = lambda other: abs(value.item() - float(other)) < 1e-4 * max(1.0, abs(float(other)))  # noqa: E731
    per_row = torch.stack([reference(logits[r:r + 1], labels[r:r + 1], eps)
                           for r in range(B) if selected[r].any()]).mean()
    guesses = [
        (_other_classes(logits, labels, eps), "you spread eps over the V-1 other classes; PyTorch's "
         "(and this exercise's) label smoothing puts eps/V on every class, the label included"),
        (reference(logits, labels, 0.0), "the loss equals the unsmoothed cross-entropy: did you forget "
         "the smoothing term?"),
        (per_row, "you averaged per sentence, then over sentences; average over all selected tokens"),
        (expected * selected.sum() / (B * T), f"you divided by all B*T = {B * T} positions; divide by "
         f"the {int(selected.sum())} selected ones"),
    ]
    if eps > 0:
        logp = logits[selected].double().log_softmax(-1)
        nll = -logp.gather(-1, labels[selected].long().unsqueeze(-1)).squeeze(-1)
        guesses.append((((1 - eps) * nll - eps * logp.sum(-1)).mean(),
                        "the uniform part should be averaged over the V classes (eps/V each), not summed"))
    for other, message in guesses:
        if not close(expected) and close(other):
            raise CheckFailed(f"[{name}] got {value.item():.5f}, expected {expected.item():.5f}: {message}")


@exercise("17.smoothed-mlm-loss", points=3, uses="smoothed_mlm_loss", forbids=NO_CROSS_ENTROPY)
def check_smoothed_mlm_loss(smoothed_mlm_loss, rng):
    """Label-smoothed token-mean cross-entropy over the selected positions; nothing else counts."""
    cases = [dict(V=5, eps=0.3, label="hint: 5 classes, eps 0.3"),
             dict(scale=400.0, eps=0.1, label="large logits (|x| ~ 1000)"),
             dict(eps=0.0, label="eps 0: plain cross-entropy"),
             dict(dtype=torch.float64, eps=0.2, label="float64 logits"),
             dict(B=1, T=1, eps=0.1, label="one sequence of one token")]
    for _ in range(4):
        cases.append(dict(eps=float(torch.rand((), generator=rng)) * 0.5, label="random"))
    for number, spec in enumerate(cases):
        eps = spec.pop("eps")
        label = spec.pop("label")
        logits, labels, selected = _case(rng, **spec)
        B, T, V = logits.shape
        name = (f"case {number} ({label}): logits {(B, T, V)} {str(logits.dtype)[6:]}, "
                f"{int(selected.sum())} selected, smoothing {eps:.3f}")
        leaf = logits.clone().requires_grad_(True)
        got = expect_scalar(name, smoothed_mlm_loss(leaf, labels.clone(), eps), "smoothed_mlm_loss")
        value = got.detach().double()
        expected = reference(logits, labels, eps)
        _diagnose(name, value, logits, labels, selected, eps, expected)
        expect_close(name, value, expected, atol=1e-4, rtol=1e-5, name="smoothed_mlm_loss")
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
        expect(abs(again.item() - got.item()) < 1e-5,
               f"[{name}] changing the logits at unselected positions moved the loss from "
               f"{got.item():.5f} to {again.item():.5f}")


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


@exercise("17.mlm-loss-empty", points=1, uses="smoothed_mlm_loss", forbids=NO_CROSS_ENTROPY)
def check_mlm_loss_empty(smoothed_mlm_loss, rng):
    """No selected position: a loss of 0 (not NaN), still connected to the logits."""
    for eps in (0.1, 0.0):
        logits, labels, _ = _case(rng)
        labels = torch.full_like(labels, IGNORE)
        leaf = logits.clone().requires_grad_(True)
        _expect_empty(f"nothing selected, smoothing {eps}", smoothed_mlm_loss(leaf, labels, eps), leaf,
                      "smoothed_mlm_loss")


@exercise("17.pretraining-loss", points=2, uses="pretraining_loss", forbids=NO_CROSS_ENTROPY)
def check_pretraining_loss(pretraining_loss, rng):
    """(total, mlm, nsp): both terms smoothed, NSP ignores -100, total = mlm + nsp."""
    for number in range(5):
        eps = (0.2, 0.0, 0.1, 0.15, 0.05)[number]
        logits, labels, _ = _case(rng)
        B = logits.shape[0]
        nsp_logits = 2 * torch.randn(B, 2, generator=rng)
        nsp_labels = torch.randint(0, 2, (B,), generator=rng)
        if number == 0:
            nsp_labels[0] = IGNORE                       # one example without a sentence pair
        if number == 3:
            nsp_labels[:] = IGNORE                       # no sentence pair at all
        name = (f"case {number}: logits {tuple(logits.shape)}, next_sentence_label "
                f"{nsp_labels.tolist()}, smoothing {eps}")
        nsp_leaf = nsp_logits.clone().requires_grad_(True)
        out = pretraining_loss(logits.clone().requires_grad_(True), nsp_leaf, labels, nsp_labels, eps)
        parts = expect_tuple(name, out, ("total", "mlm", "nsp"), lists=True)
        total, mlm, nsp = (expect_scalar(name, x, n) for x, n in zip(parts, ("total", "mlm", "nsp")))
        expected_mlm = reference(logits, labels, eps)
        expected_nsp = reference(nsp_logits.unsqueeze(1), nsp_labels.unsqueeze(1), eps)
        expect_close(name, mlm.detach().double(), expected_mlm, atol=1e-4, name="mlm")
        nsp_value = nsp.detach().double()
        if not torch.isfinite(nsp_value) and (nsp_labels == IGNORE).any():
            raise CheckFailed(f"[{name}] nsp is {nsp_value.item()}, expected {expected_nsp.item():.5f}: "
                              f"examples whose next_sentence_label is -100 must not count")
        if eps > 0 and (nsp_labels != IGNORE).any() and abs(nsp_value.item() - reference(nsp_logits.unsqueeze(1), nsp_labels.unsqueeze(1),
                                                        0.0).item()) < 1e-5:
            raise CheckFailed(f"[{name}] nsp is {nsp_value.item():.5f}, the unsmoothed value; expected "
                              f"{expected_nsp.item():.5f}: smooth the NSP term with the same smoothing")
        expect_close(name, nsp_value, expected_nsp, atol=1e-4, name="nsp (mean over the examples whose "
                     "label is not -100)")
        expect_close(name, total.detach().double(), expected_mlm + expected_nsp, atol=1e-4,
                     name="total (the two terms added with weight 1 each)")
        expect(total.requires_grad, f"[{name}] total has no gradient: training calls total.backward(), "
               f"so do not detach it or convert it to a number")
        if number == 3:
            total.backward()
            expect(nsp_leaf.grad is not None and bool((nsp_leaf.grad == 0).all()),
                   f"[{name}] with no sentence pair the NSP logits must get a zero gradient")
