"""Graded checks for lesson 17: BERT's pretraining loss (masked LM + NSP)."""
import torch
import torch.nn.functional as F

from course_lib.bert import mlm_cross_entropy
from ..grading import CheckFailed, exercise, expect, expect_close, expect_tensor

IGNORE = -100


def _case(rng):
    """Random logits (B, T, V) and labels with -100 at the unselected positions. Rows select
    different numbers of tokens (so a mean of per-row means differs from the token mean), and one
    selected label is token 0 (so treating id 0 as "ignored" is caught)."""
    B = int(torch.randint(2, 7, (1,), generator=rng))
    T = int(torch.randint(5, 24, (1,), generator=rng))
    V = int(torch.randint(8, 300, (1,), generator=rng))
    logits = 3 * torch.randn(B, T, V, generator=rng)
    targets = torch.randint(0, V, (B, T), generator=rng)
    row_share = torch.rand(B, 1, generator=rng) * 0.6 + 0.05
    selected = torch.rand(B, T, generator=rng) < row_share
    selected[0, :2] = True
    targets[0, 1] = 0
    labels = torch.where(selected, targets, torch.full_like(targets, IGNORE))
    return logits, labels, selected


def _scalar(case, got, name):
    got = expect_tensor(case, got, name)
    if got.dim() != 0:
        raise CheckFailed(f"[{case}] {name} should be a single number, a 0-d tensor as "
                          f"F.cross_entropy returns, got shape {tuple(got.shape)}")
    return got


@exercise("17.mlm-loss", points=3, uses="mlm_loss")
def check_mlm_loss(mlm_loss, rng):
    """Token-level mean cross-entropy over the selected positions; nothing else counts."""
    for case in range(6):
        logits, labels, selected = _case(rng)
        B, T, _ = logits.shape
        name = f"case {case}: logits {(B, T, logits.shape[-1])}, {int(selected.sum())} selected"
        leaf = logits.clone().requires_grad_(True)
        got = _scalar(name, mlm_loss(leaf, labels.clone()), "mlm_loss")
        value = got.detach().to(torch.float32)
        expected = mlm_cross_entropy(logits, labels)
        per_row = torch.stack([F.cross_entropy(logits[r][selected[r]], labels[r][selected[r]])
                               for r in range(B) if selected[r].any()]).mean()
        over_all_positions = expected * selected.sum() / (B * T)
        if not torch.allclose(value, expected, atol=1e-4):
            if torch.allclose(value, per_row, atol=1e-4):
                raise CheckFailed(f"[{name}] you averaged per sentence, then over sentences "
                                  f"({value.item():.4f}); BERT averages over all selected tokens "
                                  f"of the batch ({expected.item():.4f})")
            if torch.allclose(value, over_all_positions, atol=1e-4):
                raise CheckFailed(f"[{name}] you divided by all B*T = {B * T} positions "
                                  f"({value.item():.4f}); divide by the {int(selected.sum())} "
                                  f"selected ones ({expected.item():.4f})")
        expect_close(name, value, expected, atol=1e-4, name="mlm_loss")
        if not got.requires_grad:
            raise CheckFailed(f"[{name}] the loss does not depend on the logits through autograd "
                              f"(no grad_fn); compute it with torch operations")
        got.backward()
        expect(leaf.grad is not None, f"[{name}] no gradient reached the logits")
        expect(bool((leaf.grad[~selected] == 0).all()),
               f"[{name}] unselected positions received a gradient (max "
               f"{leaf.grad[~selected].abs().max().item():.2e}); they must not count")
        # Scrambling what sits at unselected positions must not change the loss.
        scrambled = logits.clone()
        scrambled[~selected] = 10 * torch.randn(scrambled[~selected].shape, generator=rng)
        again = _scalar(name, mlm_loss(scrambled, labels.clone()), "mlm_loss")
        expect(abs(again.item() - got.item()) < 1e-5,
               f"[{name}] changing the logits at unselected positions moved the loss from "
               f"{got.item():.5f} to {again.item():.5f}")


@exercise("17.mlm-loss-empty", points=1, uses="mlm_loss")
def check_mlm_loss_empty(mlm_loss, rng):
    """No selected position: a loss of 0 (not NaN), still connected to the logits."""
    logits, labels, _ = _case(rng)
    labels = torch.full_like(labels, IGNORE)
    leaf = logits.clone().requires_grad_(True)
    got = _scalar("nothing selected", mlm_loss(leaf, labels), "mlm_loss")
    expect(bool(torch.isfinite(got)), f"[nothing selected] the loss is {got.item()}; a batch in "
           f"which masking selected nothing must give 0, not NaN (F.cross_entropy divides 0 by 0)")
    expect(got.item() == 0.0, f"[nothing selected] expected 0.0, got {got.item()}")
    hint = ("return something computed from the logits, e.g. `prediction_logits.sum() * 0.0`, so "
            "that backward() reaches them (a training loop calls it on every batch)")
    try:
        got.backward()
    except RuntimeError as error:
        raise CheckFailed(f"[nothing selected] backward() failed ({error}); {hint}") from None
    expect(leaf.grad is not None, f"[nothing selected] the loss is not connected to the logits; {hint}")


@exercise("17.pretraining-loss", points=2, uses="pretraining_loss")
def check_pretraining_loss(pretraining_loss, rng):
    """(total, mlm, nsp): total = MLM + NSP with equal weights; NSP is a 2-way cross-entropy."""
    for case in range(4):
        logits, labels, _ = _case(rng)
        B = logits.shape[0]
        nsp_logits = 2 * torch.randn(B, 2, generator=rng)
        nsp_labels = torch.randint(0, 2, (B,), generator=rng)
        name = f"case {case}: logits {tuple(logits.shape)}, seq_relationship_logits {(B, 2)}"
        out = pretraining_loss(logits.clone().requires_grad_(True),
                               nsp_logits.clone().requires_grad_(True), labels, nsp_labels)
        if not (isinstance(out, (tuple, list)) and len(out) == 3):
            raise CheckFailed(f"[{name}] return a tuple (total, mlm, nsp), got "
                              f"{type(out).__name__}")
        total, mlm, nsp = (_scalar(name, x, n) for x, n in zip(out, ("total", "mlm", "nsp")))
        expected_mlm = mlm_cross_entropy(logits, labels)
        expected_nsp = F.cross_entropy(nsp_logits, nsp_labels)
        expect_close(name, mlm.detach(), expected_mlm, atol=1e-4, name="mlm")
        expect_close(name, nsp.detach(), expected_nsp, atol=1e-4, name="nsp")
        expect_close(name, total.detach(), expected_mlm + expected_nsp, atol=1e-4,
                     name="total (BERT adds the two terms with weight 1 each)")
        expect(total.requires_grad, f"[{name}] total has no gradient: training calls "
               f"total.backward(), so do not detach it or convert it to a number")
