"""The generic training loop and the accuracy helpers."""
import pytest
import torch
import torch.nn.functional as F

from course_lib.schedules import make_scheduler
from course_lib.training import sequence_accuracy, token_accuracy, train


def _regression(seed=0):
    g = torch.Generator().manual_seed(seed)
    w_true = torch.randn(4, 1, generator=g)

    def batches(step):
        x = torch.randn(32, 4, generator=g)
        return x, x @ w_true
    return batches


def test_history_lr_and_grad_norm():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = make_scheduler(opt, "constant", warmup_steps=4)
    loss_fn = lambda m, b: F.mse_loss(m(b[0]), b[1])
    # the grad norm at step 0, computed by hand on a copy
    probe = torch.nn.Linear(4, 1)
    probe.load_state_dict(model.state_dict())
    first = _regression()(0)
    loss_fn(probe, first).backward()
    norm0 = torch.cat([p.grad.flatten() for p in probe.parameters()]).norm().item()

    hist = train(model, _regression(), loss_fn, steps=60, optimizer=opt, scheduler=sched,
                 log_every=10, progress=False)
    assert list(hist.columns) == ["step", "loss", "lr", "grad_norm"]
    assert hist.step.tolist() == [0, 10, 20, 30, 40, 50, 59]
    assert hist.lr.tolist()[:2] == pytest.approx([0.02, 0.1])
    assert hist.grad_norm[0] == pytest.approx(norm0, rel=1e-5)
    assert hist.loss.iloc[-1] < 0.01 * hist.loss.iloc[0]


def test_clip_records_norm_before_clipping():
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    hist = train(model, _regression(), lambda m, b: 1000 * F.mse_loss(m(b[0]), b[1]), steps=2,
                 optimizer=opt, clip=1e-3, progress=False)
    assert (hist.grad_norm > 1.0).all()                      # the measured norm is the raw one
    assert model.weight.grad.norm() <= 1e-3 * 1.0001          # ... the gradient used was clipped
    with pytest.raises(ValueError, match=r"^steps:"):
        train(model, _regression(), lambda m, b: 0, steps=0, optimizer=opt)


def test_accuracies():
    targets = torch.tensor([[5, 6, -100], [7, 8, 9]])
    pred = torch.tensor([[5, 0, 3], [7, 8, 9]])
    assert token_accuracy(pred, targets) == pytest.approx(4 / 5)
    assert sequence_accuracy(pred, targets) == pytest.approx(1 / 2)
    logits = F.one_hot(pred.clamp(min=0), 10).float()         # arg-max gives `pred` back
    assert token_accuracy(logits, targets) == pytest.approx(4 / 5)
    with pytest.raises(ValueError, match=r"^logits_or_ids:"):
        token_accuracy(torch.zeros(2, 2, 10), targets)
