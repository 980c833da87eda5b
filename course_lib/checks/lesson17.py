"""Graded checks for lesson 17: BERT's pretraining loss (masked LM + NSP)."""
import torch
import torch.nn.functional as F

from ..bert import mlm_cross_entropy
from ..grading import CheckFailed, exercise, expect, expect_close, expect_tensor

IGNORE = -100


def _case(rng, B=None, T=None, V=None, share=None):
    """Random logits (B, T, V) and labels with -100 at the unselected positions; rows select
    different numbers of tokens, so a mean of per-row means differs from the token mean."""
    B = B or int(torch.randint(2, 7, (1,), generator=rng))
    T = T or int(torch.randint(5, 24, (1,), generator=rng))
    V = V or int(torch.randint(8, 300, (1,), generator=rng))
    logits = 3 * torch.randn(B, T, V, generator=rng)
    targets = torch.randint(0, V, (B, T), generator=rng)
    row_share = share if share is not None else torch.rand(B, 1, generator=rng) * 0.6 + 0.05
    selected = torch.rand(B, T, generator=rng) < row_share
    selected[0, 0] = True                                   # at least one selected position
    labels = torch.where(selected, targets, torch.full_like(targets, IGNORE))
    return logits, labels, targets, selected


def _scalar(case, got, name):
    got = expect_tensor(case, got, name)
    if got.dim() != 0:
        raise CheckFailed(f"[{case}] {name} should be a scalar (0-d tensor), got shape "
                          f"{tuple(got.shape)}; average over the selected tokens")
    return got


@exercise("17.mlm-loss", points=3, uses="mlm_loss")
def check_mlm_loss(mlm_loss, rng):
    """Token-level mean cross-entropy over the selected positions; nothing else counts."""
    for case in range(6):
        logits, labels, targets, selected = _case(rng)
        name = f"case {case}: logits {tuple(logits.shape)}, {int(selected.sum())} selected"
        leaf = logits.clone().requires_grad_(True)
        got = _scalar(name, mlm_loss(leaf, labels.clone()), "mlm_loss")
        expected = mlm_cross_entropy(logits, labels)
        per_row = torch.stack([F.cross_entropy(logits[r][selected[r]], labels[r][selected[r]])
                               for r in range(len(labels)) if selected[r].any()]).mean()
        if (not torch.allclose(got.detach(), expected, atol=1e-4)
                and torch.allclose(got.detach(), per_row, atol=1e-4)):
            raise CheckFailed(f"[{name}] you averaged per sentence, then over sentences "
                              f"({got.item():.4f}); BERT averages over all selected tokens of the "
                              f"batch ({expected.item():.4f})")
        all_positions = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        if torch.allclose(got.detach(), all_positions, atol=1e-4):
            raise CheckFailed(f"[{name}] your loss counts every position; only positions whose "
                              f"label is not -100 count")
        expect_close(name, got.detach().reshape(()), expected, atol=1e-4, name="mlm_loss")
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
    """No selected position: a loss of 0 (not NaN) that still supports backward()."""
    logits, labels, _, _ = _case(rng)
    labels = torch.full_like(labels, IGNORE)
    leaf = logits.clone().requires_grad_(True)
    got = _scalar("nothing selected", mlm_loss(leaf, labels), "mlm_loss")
    expect(bool(torch.isfinite(got)), f"[nothing selected] the loss is {got.item()}; a batch in "
           f"which masking selected nothing must give 0, not NaN (F.cross_entropy divides 0 by 0)")
    expect(got.item() == 0.0, f"[nothing selected] expected 0.0, got {got.item()}")
    try:
        got.backward()
    except RuntimeError as error:
        raise CheckFailed(f"[nothing selected] backward() failed ({error}); return something like "
                          f"`prediction_logits.sum() * 0.0` so the graph stays connected") from None


@exercise("17.pretraining-loss", points=2, uses="pretraining_loss")
def check_pretraining_loss(pretraining_loss, rng):
    """(total, mlm, nsp): total = MLM + NSP with equal weights; NSP is a 2-way cross-entropy."""
    for case in range(4):
        logits, labels, _, selected = _case(rng)
        B = logits.shape[0]
        nsp_logits = 2 * torch.randn(B, 2, generator=rng)
        nsp_labels = torch.randint(0, 2, (B,), generator=rng)
        name = f"case {case}: logits {tuple(logits.shape)}, seq_relationship_logits {(B, 2)}"
        out = pretraining_loss(logits, nsp_logits, labels, nsp_labels)
        if not (isinstance(out, tuple) and len(out) == 3):
            raise CheckFailed(f"[{name}] return a tuple (total, mlm, nsp), got "
                              f"{type(out).__name__}")
        total, mlm, nsp = (_scalar(name, x, n) for x, n in zip(out, ("total", "mlm", "nsp")))
        expected_mlm = mlm_cross_entropy(logits, labels)
        expected_nsp = F.cross_entropy(nsp_logits, nsp_labels)
        expect_close(name, mlm.detach(), expected_mlm, atol=1e-4, name="mlm")
        expect_close(name, nsp.detach(), expected_nsp, atol=1e-4, name="nsp")
        expect_close(name, total.detach(), expected_mlm + expected_nsp, atol=1e-4,
                     name="total (BERT adds the two terms with weight 1 each)")
