"""course_lib.device's thread control: one helper, `torch_threads`, and the callers that use it
(complexity's timer and path search, pretraining) - COURSE_TORCH_THREADS reaches every caller
whose result only moves in the last bits, and none that needs an exact count."""
from __future__ import annotations

import pytest
import torch

from course_lib import complexity, device


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield before
    torch.set_num_threads(before)


def test_torch_threads_honours_the_variable_and_restores(restore_threads, monkeypatch):
    torch.set_num_threads(3)
    monkeypatch.delenv("COURSE_TORCH_THREADS", raising=False)
    with device.torch_threads() as n:
        assert n == torch.get_num_threads() == 1
    assert torch.get_num_threads() == 3
    monkeypatch.setenv("COURSE_TORCH_THREADS", "2")            # course sweep's 2-thread run
    with device.torch_threads() as n:
        assert n == torch.get_num_threads() == 2
    with device.torch_threads(1) as n:                          # a count given is taken as it is
        assert n == torch.get_num_threads() == 1
    assert torch.get_num_threads() == 3
    with pytest.raises(RuntimeError), device.torch_threads(2):  # restored on an error too
        raise RuntimeError("inside")
    assert torch.get_num_threads() == 3


def test_torch_threads_refuses_a_count_that_is_not_positive(restore_threads, monkeypatch):
    with pytest.raises(ValueError, match=r"^threads: expected a positive int, got 0"):
        with device.torch_threads(0):
            pass
    monkeypatch.setenv("COURSE_TORCH_THREADS", "0")
    with pytest.raises(ValueError, match=r"^COURSE_TORCH_THREADS: expected a positive int, got 0"):
        with device.torch_threads():
            pass


def test_limit_threads_and_torch_threads_read_the_same_variable(restore_threads, monkeypatch):
    monkeypatch.setenv("COURSE_TORCH_THREADS", "2")
    assert device.limit_threads(1) == 2 == torch.get_num_threads()
    torch.set_num_threads(1)
    with device.torch_threads() as n:
        assert n == device.requested_threads(1) == 2


def test_path_search_runs_at_the_sweeps_thread_count(restore_threads, monkeypatch):
    """max_path_length's thread count only changes speed (its sums of 0/1 are exact): the
    2-thread sweep run reaches it."""
    seen = []
    band = complexity.band_hops(12, 3)

    def hop(layer):
        seen.append(torch.get_num_threads())
        return band(layer)

    monkeypatch.setenv("COURSE_TORCH_THREADS", "2")
    assert complexity.max_path_length(hop, 12) == complexity.max_path_length(band, 12)
    assert set(seen) == {2}


def test_one_thread_stays_one_thread_for_lesson_04s_timer(restore_threads, monkeypatch):
    """Lesson 04 times with time.thread_time (one thread's CPU time): a second thread's work
    would go unmeasured, so COURSE_TORCH_THREADS must not reach this block."""
    torch.set_num_threads(3)
    monkeypatch.setenv("COURSE_TORCH_THREADS", "2")
    with complexity.one_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 3


def test_pretraining_trains_at_the_requested_count(restore_threads, monkeypatch):
    from course_lib import pretraining

    seen = []
    monkeypatch.setattr(pretraining, "_pretrain", lambda *a: seen.append(torch.get_num_threads()))
    torch.set_num_threads(3)
    monkeypatch.setenv("COURSE_TORCH_THREADS", "2")
    pretraining.pretrain(seed=0)                                # None: COURSE_TORCH_THREADS
    pretraining.pretrain(seed=0, num_threads=1)                 # stated: exactly that
    assert seen == [2, 1] and torch.get_num_threads() == 3
