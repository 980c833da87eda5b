"""Warm-up/decay and Noam schedules against their formulas (and Hugging Face's linear schedule)."""
import pytest
import torch

from course_lib.schedules import linear_warmup_decay, make_scheduler, noam


def _lrs(scheduler, optimizer, n):
    out = []
    for _ in range(n):
        out.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return out


def _optimizer(lr):
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)


def test_linear_warmup_decay_at_chosen_steps():
    kw = dict(warmup_steps=10, total_steps=110, peak_lr=1e-3)
    expected = {0: 0.0, 1: 1e-4, 5: 5e-4, 10: 1e-3, 35: 7.5e-4, 60: 5e-4, 109: 1e-5, 110: 0.0, 500: 0.0}
    for step, lr in expected.items():
        assert linear_warmup_decay(step, **kw) == pytest.approx(lr, abs=1e-15), step
    assert linear_warmup_decay(3, 0, 10) == pytest.approx(0.7)       # no warm-up: decay only


def test_linear_matches_hugging_face():
    from transformers import get_linear_schedule_with_warmup
    opt_hf, opt_ours = _optimizer(3e-4), _optimizer(3e-4)
    hf = get_linear_schedule_with_warmup(opt_hf, num_warmup_steps=7, num_training_steps=40)
    ours = make_scheduler(opt_ours, "linear", warmup_steps=7, total_steps=40)
    assert _lrs(ours, opt_ours, 45) == pytest.approx(_lrs(hf, opt_hf, 45), abs=1e-15)


def test_noam_formula_and_peak():
    d, w = 512, 4000
    assert noam(1, d, w) == pytest.approx(512 ** -0.5 * 4000 ** -1.5, rel=1e-12)
    assert noam(w, d, w) == pytest.approx(6.9877e-4, rel=1e-4)        # the paper's peak
    assert noam(4 * w, d, w) == pytest.approx(noam(w, d, w) / 2, rel=1e-12)  # 1/√step decay
    values = [noam(s, d, w) for s in range(1, 20001)]
    assert max(range(len(values)), key=values.__getitem__) + 1 == w
    assert noam(100, d, w, factor=2.0) == pytest.approx(2 * noam(100, d, w), rel=1e-12)


def test_noam_scheduler_counts_from_one():
    opt = _optimizer(1.0)
    sched = make_scheduler(opt, "noam", d_model=64, warmup_steps=10)
    assert _lrs(sched, opt, 30) == pytest.approx([noam(s, 64, 10) for s in range(1, 31)], rel=1e-12)


def test_constant_with_and_without_warmup():
    opt = _optimizer(0.1)
    assert _lrs(make_scheduler(opt, "constant"), opt, 3) == pytest.approx([0.1] * 3)
    opt = _optimizer(0.1)
    lrs = _lrs(make_scheduler(opt, "constant", warmup_steps=4), opt, 7)
    assert lrs == pytest.approx([0.02, 0.04, 0.06, 0.08, 0.1, 0.1, 0.1])


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"^d_model:"):
        noam(1, -512, 4000)
    with pytest.raises(ValueError, match=r"^total_steps:"):
        linear_warmup_decay(0, 10, 5)
    with pytest.raises(ValueError, match=r"^warmup_steps:"):
        linear_warmup_decay(0, -1, 50)
    with pytest.raises(ValueError, match=r"^kind:"):
        make_scheduler(_optimizer(1.0), "cosine")
    with pytest.raises(ValueError, match=r"unexpected arguments \['total'\]"):
        make_scheduler(_optimizer(1.0), "noam", d_model=8, warmup_steps=2, total=3)
